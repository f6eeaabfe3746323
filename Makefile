# Hummer: the three commands a newcomer needs are `make run` and `make test`
# (and `make bench` for the benchmarks in bench/).

GO      ?= go
BIN     := bin/hummer
PG_ADDR ?= 127.0.0.1:4566
# The sample table `make run` declares: the King James Bible, one row per line.
SAMPLE  := CREATE TABLE IF NOT EXISTS docs (line TEXT) ENGINE=file CONNECTION='file://$(CURDIR)/data/kjv.txt'

.PHONY: build run test bench clean

build:
	$(GO) build -o $(BIN) ./cmd/hummer

run: build
	$(BIN) serve --pg-addr $(PG_ADDR) --data-dir ./hummer-data --init "$(SAMPLE)"

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

bench: build
	@echo "benchmarks arrive with issue 3 (bench/)"

clean:
	rm -rf bin hummer-data
