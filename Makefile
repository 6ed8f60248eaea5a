# gatehost — build, test, bench, demo. `make help` lists the targets.
GO      ?= go
PLUGINS := static-verify exec merge preconditions
WASM    := $(PLUGINS:%=build/plugins/%.wasm)
GOFILES := $(shell find . -name '*.go' -not -path './build/*')

.PHONY: all build demo test bench fuzz vet fmt clean help

all: build

help:
	@echo "make build   build/gatehost and build/plugins/<gate>.wasm"
	@echo "make demo    check real proposals against the GitHub MCP catalog, then verify the event log"
	@echo "make test    go vet + go test -race ./..."
	@echo "make bench   every figure of docs/PERFORMANCE.md (build/bench/summary.md); COUNT=5 N=2000 NLONG=20000"
	@echo "make fuzz    every fuzz target for FUZZTIME each (default 10s)"

build: build/gatehost $(WASM)

build/gatehost: $(GOFILES) go.mod go.sum
	$(GO) build -trimpath -o $@ ./cmd/gatehost

build/plugins/%.wasm: $(GOFILES) go.mod go.sum
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -trimpath -o $@ ./plugins/$*/wasm

demo: build
	./scripts/demo.sh

vet:
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./sdk/... ./plugins/... ./internal/testguests/...
	$(GO) vet -tags gatehost_wazero ./internal/engine/...

fmt:
	gofmt -w $(GOFILES)

test: vet
	@test -z "$$(gofmt -l $(GOFILES))" || { echo "gofmt needed:"; gofmt -l $(GOFILES); exit 1; }
	$(GO) test -race ./...
	$(GO) test -tags gatehost_wazero ./internal/engine/... ./host -run 'TestHostilePlugins|TestRunawayLoopOvershoot'

bench:
	GO=$(GO) ./scripts/bench.sh

fuzz:
	GO=$(GO) ./scripts/fuzz.sh

clean:
	rm -rf build var
