package host

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/host/datasource"
	"github.com/gatehost/gatehost/host/domain"
)

// The query capability (abi.CapabilityQuery) lets a stage read the
// configured domain catalogs and the rows of their views (operations
// query.capability and query.rows; abi/SPEC.md §7.12). The host evaluates
// every view through the domain's DataSource; the guest never sees the data
// source itself.
func init() { registerCapability(abi.CapabilityQuery, queryCapability{}) }

// Domain is a domain catalog and the data source its views read, for
// Config.Domains.
type Domain struct {
	Catalog *domain.Catalog
	// Source evaluates the catalog's views. The host does not close it.
	Source datasource.DataSource
	// File is where the catalog was read from, for messages; optional.
	File string
}

// prepareDomains checks, at load time, that each domain's source can
// evaluate every view of its catalog, and names the catalogs' content
// (queryDigest).
func (h *Host) prepareDomains(ctx context.Context) error {
	if len(h.cfg.Domains) == 0 {
		return nil
	}
	b := []byte(queryDigestDomain)
	for _, name := range slices.Sorted(maps.Keys(h.cfg.Domains)) {
		d := h.cfg.Domains[name]
		field := "domains." + name
		switch {
		case !nameRE.MatchString(name):
			return cfgErr(field, "name must match %s", nameRE)
		case d.Catalog == nil:
			return cfgErr(field+".catalog", "required")
		case d.Source == nil:
			return cfgErr(field+".source", "required")
		}
		if err := d.Catalog.Prepare(ctx, d.Source); err != nil {
			return &ConfigError{Field: field + ".source", Reason: "cannot evaluate the catalog's views", Err: err}
		}
		sum, err := d.Catalog.AnswerDigest()
		if err != nil {
			return &ConfigError{Field: field + ".catalog", Reason: "cannot encode a capability", Err: err}
		}
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(append(b, name...), sum[:]...)
	}
	sum := sha256.Sum256(b)
	h.queryDigest = abi.QueryDigestPrefix + hex.EncodeToString(sum[:])
	return nil
}

// queryDigestDomain starts the bytes the query digest is taken over, so
// that no other SHA-256 the host computes can name its domains.
const queryDigestDomain = "gatehost query v1\x00"

type queryCapability struct{}

func (queryCapability) call(ctx context.Context, rc *runContext, op string, request []byte) (any, error) {
	switch op {
	case abi.OpQueryCapability:
		var req abi.QueryCapabilityRequest
		if err := json.Unmarshal(request, &req); err != nil {
			return nil, badRequest(op, err)
		}
		d, err := rc.host.domain(op, req.Domain)
		if err != nil {
			return nil, err
		}
		c, ok := d.Catalog.Capability(req.Name)
		if !ok {
			return abi.QueryCapabilityAnswer{Found: false}, nil
		}
		if vars := d.Catalog.Unbound(req.Name); len(vars) > 0 {
			// Its preconditions read a value this host was not given: they
			// cannot be evaluated, and the gate denies.
			return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: fmt.Sprintf(
				"%s: domain %s: capability %s reads var %s, which is not bound here (domains.%s.vars)",
				op, req.Domain, c.Name, strings.Join(vars, ", "), req.Domain)}
		}
		return abi.QueryCapabilityAnswer{Found: true, Capability: c}, nil
	case abi.OpQueryRows:
		var req abi.QueryRowsRequest
		if err := decodeRequest(request, &req); err != nil {
			return nil, badRequest(op, err)
		}
		d, err := rc.host.domain(op, req.Domain)
		if err != nil {
			return nil, err
		}
		var v *datasource.View
		var ok bool
		switch {
		case (req.View == "") == (req.Capability == ""):
			return nil, badRequest(op, errors.New("give exactly one of view and capability"))
		case req.View != "":
			if v, ok = d.Catalog.View(req.View); !ok {
				return nil, badRequest(op, fmt.Errorf("domain %s has no view %q", req.Domain, req.View))
			}
		default:
			if v, ok = d.Catalog.CapabilityView(req.Capability); !ok {
				return nil, badRequest(op, fmt.Errorf("domain %s has no query or get capability %q backed by a view", req.Domain, req.Capability))
			}
		}
		src, err := overlaid(ctx, op, d.Source, req.Overlay)
		if err != nil {
			return nil, err
		}
		rows, err := src.Rows(ctx, v, req.Params)
		if err != nil {
			if errors.Is(err, datasource.ErrUnbound) {
				return nil, badRequest(op, err)
			}
			return nil, err // unavailable
		}
		return abi.QueryRowsAnswer{Rows: rows}, nil
	}
	return nil, unknownOperation(op)
}

// overlaid returns src as it is after effects (a request's overlay), or
// src itself when there are none. Too many effects or a malformed one is
// the request's fault (bad_request); a source that cannot apply them, or
// effects that do not apply to its data, answer unavailable.
func overlaid(ctx context.Context, op string, src datasource.DataSource, effects []abi.Effect) (datasource.DataSource, error) {
	if len(effects) == 0 {
		return src, nil
	}
	if len(effects) > abi.MaxOverlayEffects {
		return nil, badRequest(op, fmt.Errorf("overlay: %d effects (at most %d)", len(effects), abi.MaxOverlayEffects))
	}
	if err := datasource.CheckEffects(effects); err != nil {
		return nil, badRequest(op, fmt.Errorf("overlay: %w", err))
	}
	o, ok := src.(datasource.Overlayer)
	if !ok {
		return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: op + ": data source cannot apply an overlay"}
	}
	out, err := o.WithOverlay(ctx, effects)
	if err != nil {
		return nil, &abi.CallError{Code: abi.ErrCodeUnavailable, Message: op + ": overlay: " + err.Error()}
	}
	return out, nil
}

func (h *Host) domain(op, name string) (Domain, error) {
	d, ok := h.cfg.Domains[name]
	if !ok {
		return Domain{}, badRequest(op, fmt.Errorf("no domain %q (configured: %v)", name, slices.Sorted(maps.Keys(h.cfg.Domains))))
	}
	return d, nil
}
