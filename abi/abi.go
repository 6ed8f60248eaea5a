// Package abi is gatehost's wire contract with the modules that carry gates:
// the message types exchanged as JSON, the enumerations they use, the names
// of the exports a module provides and of the host functions it may import,
// and the version constants that gate loading. It owns the wire vocabulary
// the host, the SDK and the built-in gates share: capability names, reason
// codes, effect classes, the tool-id and provenance grammar (ParseToolID,
// ParseProvenance) and the call-answer envelopes (EncodeCallResult,
// EncodeCallError). Terms (gate, module, plugin, stage) are SPEC.md §1's.
//
// The language-neutral specification is SPEC.md in this directory; the JSON
// Schemas of the messages are embedded (see Schemas). This package has no
// dependency outside the standard library so that gate authors, the host and
// tools can share it freely.
package abi

import "strings"

// MajorVersion is the ABI major version this package describes. A module
// reports its major from the gate_abi_version export; the host refuses to
// load a module whose major differs. Within a major, changes are additive:
// new optional fields only, never a renamed field or a changed meaning.
const MajorVersion = 1

// MinorVersion counts additive revisions within MajorVersion. It is carried in
// requests so a gate can tell which optional fields the host may send.
const MinorVersion = 12

// Names of the functions a gate module exports. All are required, as is the
// exported linear memory named ExportMemory.
const (
	// ExportABIVersion is gate_abi_version() -> i32: the module's ABI major.
	ExportABIVersion = "gate_abi_version"
	// ExportAlloc is gate_alloc(size i32) -> i32: a guest-owned buffer of
	// size bytes into which the host writes a request. 0 means failure.
	ExportAlloc = "gate_alloc"
	// ExportDescribe is gate_describe() -> i64: the packed location of the
	// module's Descriptor JSON (see Pack).
	ExportDescribe = "gate_describe"
	// ExportEvaluate is gate_evaluate(ptr i32, len i32) -> i64: evaluates the
	// Request JSON at [ptr, ptr+len) and returns the packed location of the
	// Response JSON.
	ExportEvaluate = "gate_evaluate"
	// ExportMemory is the module's exported linear memory.
	ExportMemory = "memory"
	// ExportInitialize is the optional WASI reactor initializer. The host
	// calls it once per instance, before any other export.
	ExportInitialize = "_initialize"
)

// ImportModule is the module name of gatehost's host functions. It carries the
// major version so that a v2 host can offer both sets side by side.
const ImportModule = "gatehost_v1"

// Names of the host functions in ImportModule.
const (
	// ImportLog is log(level i32, ptr i32, len i32): writes a UTF-8 message
	// to the host's log. Levels follow log/slog: -4 debug, 0 info, 4 warn,
	// 8 error. Always granted.
	ImportLog = "log"
	// ImportCall is call(op_ptr i32, op_len i32, req_ptr i32, req_len i32) -> i32:
	// invokes a capability operation (for example "catalog.get") with a JSON
	// request. A result >= 0 is the byte length of the JSON answer now
	// pending; a negative result is a Status.
	ImportCall = "call"
	// ImportResult is result(ptr i32, len i32) -> i32: copies the pending
	// answer of the last call into [ptr, ptr+len), which must be exactly its
	// length, and clears it. Returns the number of bytes copied or a Status.
	ImportResult = "result"
)

// WASIModule is the only import module allowed besides ImportModule.
const WASIModule = "wasi_snapshot_preview1"

// WASIFunctions is the WASI preview1 subset a module may import: everything
// but sockets and proc_raise. Standard toolchains import the file functions
// whenever a program links an os package, so refusing them would refuse most
// gates; instead the host gives the guest no preopened directories, no
// environment, no arguments and no sockets, so every path_open fails and
// there is nothing to read. stdout and stderr are captured into bounded
// buffers; stdin is empty.
var WASIFunctions = []string{
	"args_get", "args_sizes_get", "environ_get", "environ_sizes_get",
	"clock_res_get", "clock_time_get",
	"fd_advise", "fd_allocate", "fd_close", "fd_datasync", "fd_fdstat_get",
	"fd_fdstat_set_flags", "fd_fdstat_set_rights", "fd_filestat_get",
	"fd_filestat_set_size", "fd_filestat_set_times", "fd_pread",
	"fd_prestat_dir_name", "fd_prestat_get", "fd_pwrite", "fd_read",
	"fd_readdir", "fd_renumber", "fd_seek", "fd_sync", "fd_tell", "fd_write",
	"path_create_directory", "path_filestat_get", "path_filestat_set_times",
	"path_link", "path_open", "path_readlink", "path_remove_directory",
	"path_rename", "path_symlink", "path_unlink_file",
	"poll_oneoff", "proc_exit", "random_get", "sched_yield",
}

// Status is a negative return value of the call and result host functions.
type Status int32

const (
	// StatusFault: a pointer and length passed by the guest fall outside its
	// memory, or the operation name is not UTF-8.
	StatusFault Status = -1
	// StatusNoResult: result was called with no answer pending.
	StatusNoResult Status = -2
	// StatusLength: result was called with a length other than the pending
	// answer's.
	StatusLength Status = -3
	// StatusTooLarge: the request to the host exceeds MaxHostRequestBytes.
	StatusTooLarge Status = -4
)

// MaxHostRequestBytes caps one request a guest passes to call.
const MaxHostRequestBytes = 1 << 20

// MaxAnswerDepth caps how deeply a gate's answer nests: objects and arrays,
// the answer object itself being level 1 (SPEC §5.4). A deeper answer is an
// abi_violation, refused in one pass before any schema validation.
const MaxAnswerDepth = 64

// Pack packs a guest memory location as gate_evaluate and gate_describe return
// it: ptr in the high 32 bits, length in the low 32 bits.
func Pack(ptr, length uint32) uint64 { return uint64(ptr)<<32 | uint64(length) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) (ptr, length uint32) { return uint32(v >> 32), uint32(v) }

// Reason codes the host puts on a stage that did not produce a valid answer.
// They are stable: callers and dashboards branch on them.
const (
	// ReasonPluginTrap: the guest trapped, panicked or exited.
	ReasonPluginTrap = "plugin_trap"
	// ReasonPluginTimeout: the stage deadline passed.
	ReasonPluginTimeout = "plugin_timeout"
	// ReasonPluginOutOfMemory: the guest hit the stage's memory cap.
	ReasonPluginOutOfMemory = "plugin_out_of_memory"
	// ReasonABIViolation: the answer was not JSON, failed the response
	// schema, had an unknown verdict, lay outside memory or exceeded the
	// size cap.
	ReasonABIViolation = "abi_violation"
	// ReasonCapabilityDenied: the guest called a capability that was not
	// granted to the stage (the guest gets an error; this reason appears
	// in evidence, and on the stage when the guest then fails).
	ReasonCapabilityDenied = "capability_denied"
	// ReasonLoadError: the pipeline refused to start (load time only).
	ReasonLoadError = "load_error"
	// ReasonPluginQuarantined: the plugin failed too often recently and
	// was not called.
	ReasonPluginQuarantined = "plugin_quarantined"
	// ReasonHostError: the host itself could not run the stage for a
	// reason of its own (an internal error; not produced in normal
	// operation).
	ReasonHostError = "host_error"
	// ReasonHostOverloaded: the host was at its cap of concurrent runs, or
	// the plugin's pool had no free instance, until the deadline; the
	// guest was not called.
	ReasonHostOverloaded = "host_overloaded"
	// ReasonCanceled: the caller canceled the run, or its own deadline
	// passed, before the stage answered (SPEC.md §9.1).
	ReasonCanceled = "canceled"
	// ReasonUnspecified: the gate answered inconclusive without a reason
	// and no capability was denied (SPEC.md §5.4).
	ReasonUnspecified = "unspecified"
)

// Reason codes the Go SDK puts on the inconclusive answers it makes for a
// gate, and those the built-in gates use for input they do not handle
// (SPEC.md §9.2). The conformance kit treats them, ReasonUnspecified and a
// reason starting ReasonPrefixUnsupported as a gate not handling a subject.
const (
	// ReasonPrefixUnsupported starts every reason that says a gate does
	// not handle what it was sent.
	ReasonPrefixUnsupported = "unsupported"
	// ReasonUnsupportedSubject: the gate does not check this subject kind.
	ReasonUnsupportedSubject = "unsupported_subject"
	// ReasonBadConfig: the gate's stage config did not decode.
	ReasonBadConfig = "bad_config"
	// ReasonGateError: the gate function returned an error.
	ReasonGateError = "gate_error"
	// ReasonGatePanic: the gate function panicked (recovered).
	ReasonGatePanic = "gate_panic"
	// ReasonBadRequest: the request or its subject did not decode.
	ReasonBadRequest = "bad_request"
	// ReasonUnsupportedABI: the request's ABI major is not the gate's.
	ReasonUnsupportedABI = "unsupported_abi"
	// ReasonNotRegistered: the module registered no gate function.
	ReasonNotRegistered = "gate_not_registered"
	// ReasonResponseEncoding: the gate's answer did not encode as JSON.
	ReasonResponseEncoding = "response_encoding"
	// ReasonConfigNotHeld: the request carried config_digest without
	// config, and the gate holds no config of that digest (SPEC.md §5.3,
	// minor 9). The host then sends the config again on the next run.
	ReasonConfigNotHeld = "config_not_held"
)

// ConfigCacheSize is how many configs a gate that declares config_cache
// keeps at least: the last ConfigCacheSize distinct configs it received in
// full, by digest (SPEC.md §5.3, minor 9). The host omits a config only
// when it is among the last ConfigCacheSize distinct configs it sent that
// instance in full.
const ConfigCacheSize = 8

// ConfigDigestPrefix starts a request's config_digest: "sha256:" and the
// SHA-256 of the config member's bytes as sent, in lowercase hex.
const ConfigDigestPrefix = "sha256:"

// CodeUndecodableArguments is the code of the host's own blocking finding
// on a tool call or action whose arguments the host could not decode
// (SPEC.md §9.4): such a subject is never accepted, whatever the gates say.
const CodeUndecodableArguments = "undecodable_arguments"

// CodeConfirmationRequired is the code of a gate's blocking finding on a
// tool call that needs a person's confirmation and carries none that
// confirms it (the exec gate's check 6, docs/GATES.md). The front ends
// read it: a rejection whose only blocking findings carry it is one a
// person's approval would decide (gatehost mcp asks through elicitation;
// gatehost serve answers it like any rejection, and an approver may mint
// an approval with POST /v1/approvals).
const CodeConfirmationRequired = "confirmation_required"

// Capability names: the families of host operations an operator grants to
// a stage (SPEC.md §7.6). An operation "family.verb" belongs to capability
// "family" (CapabilityOf).
const (
	// CapabilityCatalog: OpCatalogGet and OpCatalogList on the run's
	// pinned catalog snapshot.
	CapabilityCatalog = "catalog"
	// CapabilitySession: OpSessionGet, the run's agent session.
	CapabilitySession = "session"
	// CapabilityQuery: OpQueryCapability and OpQueryRows on the
	// operator's data sources.
	CapabilityQuery = "query"
	// CapabilityPolicy: OpPolicyMerge, the operator's merge policy.
	CapabilityPolicy = "policy"
	// CapabilityCheck: OpCheckRun, the operator's named build/test checks.
	CapabilityCheck = "check"
	// CapabilitySchema: OpSchemaValidate, JSON Schema validation against
	// the input schemas of the run's pinned catalog snapshot (minor 3), and
	// OpSchemaValidateMany, many of them in one call (minor 12).
	CapabilitySchema = "schema"
	// CapabilityCounters: OpCountersGet, the host's counts of the accepted
	// calls of the run's session and principal (minor 8).
	CapabilityCounters = "counters"
)

// SessionDigestPrefix starts a request's context.session_digest:
// "sha256:" and the SHA-256, in lowercase hex, of the run's session set
// (SPEC.md §5.3, §7.9, minor 10).
const SessionDigestPrefix = "sha256:"

// IsSessionDigest reports whether d has the form of a session digest:
// SessionDigestPrefix and 64 lowercase hex digits. A gate treats any other
// context.session_digest as absent (SPEC.md §7.9).
func IsSessionDigest(d string) bool { return isSHA256Name(d, SessionDigestPrefix) }

// QueryDigestPrefix starts a request's context.query_digest: "sha256:"
// and the SHA-256, in lowercase hex, of the domain catalogs the host
// answers query.capability from (SPEC.md §5.3, §7.12, minor 11).
const QueryDigestPrefix = "sha256:"

// IsQueryDigest reports whether d has the form of a query digest:
// QueryDigestPrefix and 64 lowercase hex digits. A gate treats any other
// context.query_digest as absent (SPEC.md §7.12).
func IsQueryDigest(d string) bool { return isSHA256Name(d, QueryDigestPrefix) }

// isSHA256Name reports whether d is prefix and a SHA-256 in lowercase hex.
func isSHA256Name(d, prefix string) bool {
	hex, ok := strings.CutPrefix(d, prefix)
	return ok && IsSchemaDigest(hex)
}
