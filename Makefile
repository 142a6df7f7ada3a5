# hpc: a Slurm-style HPC cluster in one binary.
GO      ?= go
BIN     := bin/hpc
# Build tags every build of hpc takes (scripts/go-tags): without urfave/cli's
# documentation generator and suggestions, whose package inits (a Markdown
# renderer's tables) every command would pay at each start.
export GOFLAGS += -tags=$(shell cat scripts/go-tags)

.PHONY: all build up down test test-short fuzz bench arm64 clean

all: build

build:
	$(GO) build -o $(BIN) .
	@$(BIN) install-links >/dev/null

# Start the 3-node lab on this machine and run a demo job through it.
up: build
	$(BIN) up
	$(BIN) submit --wait testdata/jobs/hello.sh
	@$(BIN) queue
	@$(BIN) nodes
	@$(BIN) acct
	@echo; echo "Output of the demo job:"; cat slurm-*.out | tail -n 3
	@echo; echo "Put the commands on your PATH:  export PATH=$(CURDIR)/bin:\$$PATH"

down:
	$(BIN) down

# Everything: unit tests, fuzz seeds, and the real 3-node cluster test.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

test-short:
	$(GO) test -short -count=1 ./...

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDirectives -fuzztime=30s ./cluster/jobspec/
	$(GO) test -run='^$$' -fuzz=FuzzExpand -fuzztime=30s ./cluster/hostlist/

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./sched/ ./exec/ ./accounting/

# linux/arm64: cross-build with cgo, unit tests and a one-node lab under
# qemu-user (as root; scripts/arm64.sh --install fetches the cross compiler
# and qemu from Debian).
arm64:
	scripts/arm64.sh

clean:
	rm -rf bin
