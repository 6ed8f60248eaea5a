# gatehost — build, test, bench, demo. `make help` lists the targets.
GO      ?= go
PLUGINS := static-verify exec merge preconditions policy
WASM    := $(PLUGINS:%=build/plugins/%.wasm)
GOFILES := $(shell find . -name '*.go' -not -path './build/*' -not -path './testdata/mcp/node_modules/*')

.PHONY: all build install uninstall demo test test-short bench fuzz vet fmt clean help plugin-kit mcp-deps mcp-conformance mcp-inspector

# make install puts PREFIX/bin/gatehost and PREFIX/lib/gatehost/plugins/<gate>.wasm,
# where a config's plugins.P.builtin finds the gates (README "Install").
PREFIX  ?= /usr/local
DESTDIR ?=

all: build

help:
	@echo "make build   build/gatehost and build/plugins/<gate>.wasm"
	@echo "make install     PREFIX/bin/gatehost and PREFIX/lib/gatehost/plugins/<gate>.wasm (PREFIX=/usr/local); make uninstall removes them"
	@echo "make demo    check real proposals against the GitHub MCP catalog, then verify the event log"
	@echo "make test    go vet, gofmt, no tracked build outputs or dangling citations, go test -race ./..., the install check, make mcp-inspector"
	@echo "make test-short  gofmt, go test -short ./...: no PostgreSQL, no MCP servers from npm, no race detector"
	@echo "make bench   every figure of docs/PERFORMANCE.md (build/bench/summary.md); COUNT=5 N=2000 NLONG=20000"
	@echo "make fuzz    every fuzz target for FUZZTIME each (default 10s)"
	@echo "make plugin-kit  scaffold a gate, build, test and check it; check and run the WAT example gate"
	@echo "make mcp-deps    install the real MCP servers the gateway tests run (npm ci, testdata/mcp)"
	@echo "make mcp-conformance  the MCP conformance suite at 2025-11-25 and 2026-07-28, directly and through gatehost mcp"
	@echo "make mcp-inspector    the MCP Inspector CLI drives gatehost mcp (stdio and Streamable HTTP) in front of real servers"

build: build/gatehost $(WASM)

# The version printed by gatehost version: the checkout's git description.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

build/gatehost: $(GOFILES) go.mod go.sum
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/gatehost

build/plugins/%.wasm: $(GOFILES) go.mod go.sum
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -o $@ ./plugins/$*/wasm

install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/gatehost/plugins
	install -m 0755 build/gatehost $(DESTDIR)$(PREFIX)/bin/gatehost
	install -m 0644 $(WASM) $(DESTDIR)$(PREFIX)/lib/gatehost/plugins/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/gatehost $(PLUGINS:%=$(DESTDIR)$(PREFIX)/lib/gatehost/plugins/%.wasm)
	rmdir $(DESTDIR)$(PREFIX)/lib/gatehost/plugins $(DESTDIR)$(PREFIX)/lib/gatehost 2>/dev/null || true

demo: build mcp-deps
	./scripts/demo.sh

vet:
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./sdk/... ./plugins/... ./internal/testing/testguests/...
	$(GO) vet -tags gatehost_wazy ./internal/engine/...

fmt:
	gofmt -w $(GOFILES)

# The MCP servers the gateway tests run behind gatehost mcp, at the exact
# versions of testdata/mcp/package-lock.json; reinstalled when the lock
# file changes (npm writes node_modules/.package-lock.json on install).
MCP_DEPS := testdata/mcp/node_modules/.package-lock.json

mcp-deps: $(MCP_DEPS)

$(MCP_DEPS): testdata/mcp/package.json testdata/mcp/package-lock.json
	npm ci --prefix testdata/mcp --no-audit --no-fund
	touch $@

mcp-conformance: build mcp-deps
	./scripts/mcp-conformance.sh

# A client gatehost did not write, end to end: the MCP Inspector CLI lists,
# reads, writes and edits through gatehost mcp, checking each result, the
# disk and the event log (about 25 s).
mcp-inspector: build mcp-deps
	./scripts/mcp-inspector.sh

test: vet mcp-deps
	./scripts/check-tree.sh
	@test -z "$$(gofmt -l $(GOFILES))" || { echo "gofmt needed:"; gofmt -l $(GOFILES); exit 1; }
	$(GO) test -race -timeout 60m ./...
	cd deploy/kubernetes/validate && $(GO) test ./...
	$(GO) test -tags gatehost_wazy ./internal/engine/... ./host -run 'TestHostilePlugins|TestRunawayLoopOvershoot|TestInspectAgreesWithCompile'
	$(GO) test ./internal/engine/ -run 'TestInspectAgreesWithCompile'
	./scripts/install-check.sh
	$(MAKE) mcp-inspector

# The quick tier: what go test -short ./... needs is Go and wat2wasm. Tests
# that need PostgreSQL or the MCP servers of make mcp-deps skip, saying so.
test-short:
	@test -z "$$(gofmt -l $(GOFILES))" || { echo "gofmt needed:"; gofmt -l $(GOFILES); exit 1; }
	$(GO) test -short -timeout 10m ./...

bench:
	GO=$(GO) ./scripts/bench.sh

fuzz:
	GO=$(GO) ./scripts/fuzz.sh

# The third-party gate kit end to end, as docs/WRITING-A-GATE.md tells it:
# scaffold a gate next to this checkout, build, test and check it; then check
# and run the WAT example gate. The budget is widened for a shared CI machine.
plugin-kit: build
	rm -rf build/scaffold && mkdir -p build/scaffold
	cd build/scaffold && ../gatehost plugin new demo
	$(MAKE) -C build/scaffold/demo build test check GATEHOST=$(CURDIR)/build/gatehost CHECKFLAGS="--budget-time 5s"
	$(MAKE) -C examples/effect-guard-wat check run GATEHOST=$(CURDIR)/build/gatehost

clean:
	rm -rf build var
