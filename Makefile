# The README's two commands are `make demo` (the main job) and `make test`.
GO      ?= go
# Debian's interpreter, where python3-pytest, python3-snappy and
# python3-torch install (the first python3 on PATH may be another one).
PYTHON  ?= /usr/bin/python3
PKGS    := ./...
FUZZTIME ?= 10s
BIN     := bin

.PHONY: all build test lint bench fuzz demo chaos clean image compose-test k8s-test

# The image's version: the commit (and -dirty), unless given.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
IMAGE   ?= trainmaster
# The image's build context: static binaries, the CA bundle, an empty data/.
IMAGEDIR := build/image

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# Everything CI checks: formatting, vet, every Go test with the race
# detector, the Python package's tests against the real binaries, then the
# deployment files: the image and the compose cluster (a Docker engine and
# docker-compose), the Kubernetes manifests.
test: lint build
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	@echo "Python tests with $(PYTHON) ($$($(PYTHON) --version 2>&1))"
	cd python && TRAINMASTER_BIN=$(CURDIR)/$(BIN) $(PYTHON) -m pytest -q -p no:cacheprovider tests
	$(MAKE) compose-test k8s-test

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Every Go benchmark briefly, then a short run of `master bench` (embedded
# etcd with fsync, 1,000 chunks, 1 and 64 trainers); see doc/performance.md
# for the full run.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x $(PKGS)
	$(BIN)/master bench -warmup 500ms -duration 2s

# A short smoke run of every fuzz target; run one longer with
# `go test -run '^$$' -fuzz FuzzReadChunk -fuzztime 10m ./go/recordio`.
FUZZPKGS := ./go/recordio ./internal/etcdstore
fuzz:
	@for pkg in $(FUZZPKGS); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# The main job: a master and four trainers on a sample dataset, one trainer
# stalling and one failing a task, with live progress and a final check that
# every record of every pass was consumed.
demo: build
	$(BIN)/demo -bin $(BIN)

# The fault-injection run by hand, longer than CI's: e.g.
# make chaos CHAOS_FLAGS='-records 800000 -record-delay 5ms -seed 11'
CHAOS_FLAGS ?= -seed 1 -intensity 1.5
chaos: build
	$(BIN)/chaos -bin $(BIN) $(CHAOS_FLAGS)

clean:
	rm -rf $(BIN) build

# The container image, FROM scratch (docker/Dockerfile): static binaries
# built here, so that no base image is pulled.
image:
	rm -rf $(IMAGEDIR) && mkdir -p $(IMAGEDIR)/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(IMAGEDIR)/ ./cmd/...
	cp /etc/ssl/certs/ca-certificates.crt docker/Dockerfile $(IMAGEDIR)/
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) -t $(IMAGE):latest $(IMAGEDIR)

# The compose cluster of docker/compose.yaml on images built here, with the
# leader's container killed mid-pass (docker/compose_test.go).
compose-test: image
	IMAGE=$(IMAGE):$(VERSION) $(GO) test -tags compose -count=1 -v -timeout 15m ./docker/

# The Kubernetes manifests, decoded strictly against k8s.io/api (a module
# of its own: docker/k8s).
k8s-test:
	cd docker/k8s && $(GO) vet ./... && $(GO) test -count=1 ./...
