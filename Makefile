# The README's two commands are `make demo` (the main job) and `make test`.
GO      ?= go
PKGS    := ./...
FUZZTIME ?= 10s
BIN     := bin

.PHONY: all build test lint bench fuzz demo clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Everything CI checks: formatting, vet, and every test with the race detector.
test: lint
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x $(PKGS)

# A short smoke run of every fuzz target; run one longer with
# `go test -run '^$$' -fuzz FuzzReadChunk -fuzztime 10m ./go/recordio`.
fuzz:
	@for target in $$($(GO) test -list '^Fuzz' ./go/recordio | grep '^Fuzz'); do \
		echo "== $$target"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) ./go/recordio || exit 1; \
	done

# Until the master exists the main job is a RecordIO round trip.
demo: build
	@set -e; dir=$$(mktemp -d); \
	seq 1 100000 | sed 's/^/record /' | $(BIN)/recordio write -o $$dir/demo.recordio -max-chunk-bytes 65536; \
	$(BIN)/recordio stat $$dir/demo.recordio; \
	$(BIN)/recordio verify $$dir/demo.recordio; \
	test "$$($(BIN)/recordio cat $$dir/demo.recordio | sha256sum)" = "$$(seq 1 100000 | sed 's/^/record /' | sha256sum)"; \
	echo "round trip: 100000 records written, verified and read back identical"; \
	rm -rf $$dir

clean:
	rm -rf $(BIN)
