# Hummer: the three commands a newcomer needs are `make run` and `make test`
# (and `make bench` for the benchmarks in bench/, `make bench-latency` for only the
# Kafka latency one, `make bench-checkpoint` for only the checkpoint one, and
# bench-tpch, bench-tables, bench-image, bench-nexmark, bench-state and
# bench-metrics for the suites `make bench` leaves out: TPC-H, Hummer's own tables,
# the VM image, the Nexmark queries, the disk state backend and the cost of task
# metrics).

GO      ?= go
# Build tags that keep code Hummer never runs out of its binary: 6 MB less, and
# fewer package initialisers for a VM image to run as it boots. grpcnotrace drops
# grpc's x/net/trace pages, and with them text/template, whose reflection keeps
# the linker from dropping any method; arrow_json_stdlib has Arrow use
# encoding/json instead of goccy/go-json. Exported, so the go commands that tests
# and benchmarks start build the same binary. cmd/hummer/image.go says it again
# for `hummer image build` run from a source tree.
export GOFLAGS += -tags=grpcnotrace,arrow_json_stdlib
BIN     := bin/hummer
PG_ADDR ?= 127.0.0.1:4566
# The sample table `make run` declares: the King James Bible, one row per line.
SAMPLE  := CREATE TABLE IF NOT EXISTS docs (line TEXT) ENGINE=file CONNECTION='file://$(CURDIR)/data/kjv.txt'

.PHONY: build run test bench bench-latency bench-checkpoint bench-image bench-tpch bench-tables bench-nexmark bench-state bench-metrics clean

build:
	$(GO) build -o $(BIN) ./cmd/hummer

run: build
	$(BIN) serve --pg-addr $(PG_ADDR) --data-dir ./hummer-data --init "$(SAMPLE)"

# The runtime, the control plane and the wire server are concurrent: their tests
# also run under the race detector. The wire server meets arbitrary bytes from the
# network: FuzzConn fuzzes it for a fixed budget (corpus: wire/testdata/fuzz/FuzzConn).
# The dashboard's browser test leaves its screenshots in bin/screenshots.
test:
	$(GO) vet ./...
	HUMMER_SCREENSHOTS=$(CURDIR)/bin/screenshots $(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -timeout 20m ./exec/... ./wire/ ./session/ ./connectors/table/
	$(GO) test -run='^$$' -fuzz=FuzzConn -fuzztime=20s ./wire/

# WordCount against DuckDB, mawk and a hand-written Go counter, then 3 TaskManagers on
# loopback against local mode, then a GROUP BY larger than memory against DuckDB (both
# under 1 GiB, spilling), then end-to-end latency through Kafka, then checkpoints'
# cost and recovery from a lost TaskManager (bench/README.md). bench/ is its own
# module, so DuckDB's cgo never enters the engine's build; it writes bench/results/ and
# regenerates bench/README.md (from latency.json and checkpoint.json too, so those run
# first). BENCH_FLAGS: e.g. -reps 3 -copies 10 -suites distributed; LATENCY_FLAGS: e.g.
# -rates 5000 -measure 5s; CHECKPOINT_FLAGS: e.g. -reps 3 -kills 3 -freezes 1.
bench: build
	@command -v mawk >/dev/null || (apt-get update && apt-get install -y mawk)
	cd bench && $(GO) run ./cmd/latency -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) $(LATENCY_FLAGS)
	cd bench && $(GO) run ./cmd/checkpoint -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) $(CHECKPOINT_FLAGS)
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) $(BENCH_FLAGS)

# Only the latency benchmark (under 2 minutes), then the README redrawn from the
# results already in bench/results/.
bench-latency: build
	cd bench && $(GO) run ./cmd/latency -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) $(LATENCY_FLAGS)
	cd bench && $(GO) run ./cmd/wordcount -render results/latest.json

# Only the checkpoint benchmark (under 3 minutes): throughput with checkpoints every
# second against none, and a TaskManager killed under a running job; then the README
# redrawn from the results already in bench/results/.
bench-checkpoint: build
	cd bench && $(GO) run ./cmd/checkpoint -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) $(CHECKPOINT_FLAGS)
	cd bench && $(GO) run ./cmd/wordcount -render results/latest.json

# Only TPC-H (issue 21; about 40 minutes at scale factor 1): the 22 queries on Hummer
# over CSV files, DuckDB over the same files and over its own tables, and PostgreSQL
# 15 (Debian's postgresql-15, a server the benchmark starts in a scratch directory),
# every answer checked against PostgreSQL's; results/tpch.json and the README.
# TPCH_FLAGS: e.g. -tpch-sf 0.1 -tpch-reps 1 -tpch-timeout 2m.
bench-tpch: build
	@test -x /usr/lib/postgresql/15/bin/postgres || (apt-get update && apt-get install -y postgresql-15)
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) -suites tpch $(TPCH_FLAGS)

# Only the tables suite (about 4 minutes): psql's \copy of ten million rows and
# pgbench's single-row INSERTs at 1 and 16 sessions into a table Hummer stores,
# against PostgreSQL 15 with its durable defaults. TABLES_FLAGS: e.g. -tables-rows
# 1000000 -tables-reps 1.
bench-tables: build
	@test -x /usr/lib/postgresql/15/bin/pgbench || (apt-get update && apt-get install -y postgresql-15)
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) -suites tables $(TABLES_FLAGS)

# Only the Nexmark suite (issues 24 and 25; about 8 minutes): the queries of
# bench/nexmark (q0-q22 but q6, refused over a stream as Flink refuses it) as INSERT INTO
# blackhole tables over ENGINE=nexmark tables at rate=0 that end but are planned as
# streams (continuous jobs), through `hummer serve` at parallelism 1 and 2, against a
# hand-written Go program doing q0 and q5 over the same generator and the per-core
# figures Flink and RisingWave publish; results/nexmark.json, a plot and the README.
# NEXMARK_FLAGS: e.g. -nexmark-events 2000000 (or q0=2000000,q5=1000000) -nexmark-reps 1
# -nexmark-queries q0,q5.
bench-nexmark: build
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) -suites nexmark $(NEXMARK_FLAGS)

# Only the disk state backend (issue 27; about 4 minutes): a streaming GROUP BY over
# 50 million distinct keys on the disk backend within 256MiB of state memory (time,
# peak RSS, every emitted row checked), the disk backend against memory on a state
# that fits, and checkpoints of a 2 GB state with 1% of its keys changing between
# them (incremental against full); results/state.json and the README.
# STATE_FLAGS: e.g. -state-keys 10000000 -state-checkpoint-bytes 500000000.
bench-state: build
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) -suites state $(STATE_FLAGS)

# Only the cost of task metrics (issue 26; a few minutes): WordCount (30 x kjv) and
# Nexmark q0 (bench/nexmark/q0.sql) at parallelism 1 as jobs of one `hummer serve`
# with SET task_metrics on and off, interleaved; medians of CPU and wall time against
# the goal of under 2%; results/metrics_overhead.json and the README.
# METRICS_FLAGS: e.g. -metrics-reps 20 -metrics-events 8000000.
bench-metrics: build
	cd bench && $(GO) run ./cmd/wordcount -repo $(CURDIR) -hummer $(CURDIR)/$(BIN) -suites metrics $(METRICS_FLAGS)

clean:
	rm -rf bin hummer-data

# Only the VM image benchmark: image size and boot time to the first answered
# query under qemu (TCG here), against the paper's 100 MB / 2 s.
bench-image: build
	cd bench && $(GO) run ./cmd/image -repo $(CURDIR)
	cd bench && $(GO) run ./cmd/wordcount -render results/latest.json
