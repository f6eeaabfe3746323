// Command hummer is the one Hummer binary: `hummer serve` runs the engine in local
// mode behind a PostgreSQL wire server; `hummer sql` runs SQL in an embedded
// engine and prints the results. This file is flags and wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/hummer-db/hummer/connectors"
	memstore "github.com/hummer-db/hummer/connectors/memory"
	"github.com/hummer-db/hummer/exec"
	"github.com/hummer-db/hummer/exec/control"
	"github.com/hummer-db/hummer/exec/jobmanager"
	"github.com/hummer-db/hummer/exec/network"
	"github.com/hummer-db/hummer/exec/operators"
	"github.com/hummer-db/hummer/exec/taskmanager"
	"github.com/hummer-db/hummer/session"
	"github.com/hummer-db/hummer/wire"
)

const usage = `hummer — a streaming SQL engine

Usage:
  hummer serve [--pg-addr 127.0.0.1:4566] [--http-addr 127.0.0.1:8081] [--data-dir ./hummer-data] [--init SQL] [--slots N] [security flags]
  hummer sql [--data-dir ./hummer-data] (-e "SQL" | -f file.sql | -f -)
  hummer jobmanager [--pg-addr 127.0.0.1:4566] [--http-addr 127.0.0.1:8081] [--rpc-addr 127.0.0.1:6123] [--data-addr HOST:PORT]
                    [--data-dir ./hummer-data] [security flags]
  hummer taskmanager --jobmanager HOST:PORT [--slots N] [--data-dir DIR] [--data-addr 127.0.0.1:0] [--advertise-addr HOST]
                     [--http-addr ADDR] [--network NAME=ADDR ...] [--sched-batch=false]
  hummer image build --out DIR [--kernel PATH] [--add SRC:DST ...] [-- ROLE ARGS...]
  hummer image run DIR --pg-port PORT [--cpus N] [--memory SIZE] [--forward H:G ...]
  hummer image oci --out DIR|FILE.tar [--push REGISTRY/REPO:TAG]   (a container image; roles as its args)

Checkpoint flags (serve, jobmanager): --checkpoint-interval D (1s), --checkpoint-store URL
  (file:///dir, or s3://bucket/prefix?region=R[&endpoint=URL] with $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY);
  --catalog-store URL (same forms; default: the data directory) keeps the catalog there, one object catalog.json;
jobmanager: --heartbeat-timeout D (3s)
HTTP (--http-addr; '' turns it off): the dashboard (serve, jobmanager; off loopback it asks for a
user and password of the PostgreSQL port; HTTPS with --http-tls), /metrics, /healthz, /readyz;
a TaskManager has none unless given one
Memory (serve, jobmanager, taskmanager): --memory SIZE, the soft limit (default: $GOMEMLIMIT,
else 90% of the cgroup's limit); memory a big query grew goes back to the system (lazily: MADV_FREE) when it ends

Security flags (serve, jobmanager):
  --auth trust|password|scram-sha-256   default: trust on a loopback --pg-addr, scram-sha-256 otherwise
  --superuser-password PW               password of the superuser hummer (or $HUMMER_PASSWORD)
  --tls-cert FILE --tls-key FILE [--tls-required]
  --max-connections N (100)   --superuser-reserved-connections N (3)   --auth-timeout D (1m)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve", "jobmanager", "taskmanager":
		lazyFree() // long-lived servers: see lazyfree_linux.go
	}
	stopProfile := startCPUProfile()
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sql":
		err = runSQL(os.Args[2:], os.Stdin, os.Stdout)
	case "jobmanager":
		err = jobManager(os.Args[2:])
	case "taskmanager":
		err = taskManager(os.Args[2:])
	case "image":
		err = image(os.Args[2:])
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "hummer: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hummer:", err)
		os.Exit(1)
	}
}

// startCPUProfile profiles the whole process into the file $HUMMER_CPUPROFILE
// names, with the command and process id appended (the processes of a cluster
// on one host do not overwrite each other's), when it is set: a way to see
// where a TaskManager or JobManager spends its time. The returned function
// stops and writes the profile.
func startCPUProfile() (stop func()) {
	path := os.Getenv("HUMMER_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d", path, os.Args[1], os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hummer: HUMMER_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// newRegistry returns what every role of the binary builds its tasks through:
// the built-in operators and every connector, registered here once and
// explicitly. The store is the memory connector's tables.
func newRegistry() (*exec.Registry, *memstore.Store) {
	reg := exec.NewRegistry()
	operators.Register(reg)
	return reg, connectors.Register(reg)
}

// openEngine starts a local-mode engine with every connector registered.
// alloc may be nil (the default allocator).
func openEngine(dataDir string, slots int, log *slog.Logger, alloc memory.Allocator) (*session.Engine, error) {
	return openCluster(dataDir, 1, slots, log, alloc)
}

// openCluster starts an engine of tms TaskManagers in this process, joined by
// network channels on loopback when there is more than one.
func openCluster(dataDir string, tms, slots int, log *slog.Logger, alloc memory.Allocator) (*session.Engine, error) {
	reg, tables := newRegistry()
	return session.Open(session.Config{
		DataDir:      dataDir,
		Registry:     reg,
		Validate:     connectors.ValidateLocal, // its own TaskManagers read the files
		Unbounded:    connectors.Unbounded,
		EstimateRows: connectors.EstimateRows, EstimateDistinct: connectors.EstimateDistinct,
		Upsert:           connectors.Upsert,
		Retracts:         connectors.Retracts,
		SourceWatermarks: connectors.SourceWatermarks,
		InsertWaits:      connectors.InsertWaits,
		Slots:            slots,
		TaskManagers:     tms,
		Log:              log,
		Alloc:            alloc,
		OnClose:          tables.Close,
	})
}

func serve(args []string) error {
	fs, o := serveFlags(flag.ExitOnError) // flags.go
	fs.Parse(args)
	pgAddr, dataDir, initSQL, slots, httpAddr, ckpt, sec, mem := o.pgAddr, o.dataDir, o.initSQL, o.slots, o.httpAddr, o.ckpt, o.sec, o.mem

	if err := ckpt.check(); err != nil { // cluster.go
		return err
	}
	catalog, closeCatalog, err := o.catalog.open() // cluster.go
	if err != nil {
		return err
	}
	defer closeCatalog()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := applyMemoryLimit(*mem, log); err != nil {
		return err
	}
	stateBackend, stateMemory, err := o.state.parse()
	if err != nil {
		return err
	}
	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	ep := newEndpoint("loading the catalog and resuming jobs")
	stopHTTP, err := httpAddr.start(ep, true, sec, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	reg, tables := newRegistry()
	eng, err := session.Open(session.Config{
		DataDir: *dataDir, Registry: reg, Validate: connectors.ValidateLocal, Unbounded: connectors.Unbounded, EstimateRows: connectors.EstimateRows, EstimateDistinct: connectors.EstimateDistinct,
		Upsert: connectors.Upsert, Retracts: connectors.Retracts, SourceWatermarks: connectors.SourceWatermarks, InsertWaits: connectors.InsertWaits, Slots: *slots, Log: log, OnClose: tables.Close,
		CheckpointURL: *ckpt.url, CheckpointInterval: *ckpt.interval, StateBackend: stateBackend, StateMemory: stateMemory,
		CatalogStore: catalog, NoTaskMetrics: !*o.taskMetrics,
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	ep.attach(eng)
	if *initSQL != "" {
		s := eng.NewSession()
		err := s.Exec(context.Background(), *initSQL, func(r *session.Result) error { return nil })
		s.Close()
		if err != nil {
			return fmt.Errorf("--init: %w", err)
		}
	}
	return servePG(eng, *pgAddr, *dataDir, log, sec, ep)
}

// servePG answers the PostgreSQL wire protocol on addr until SIGINT or SIGTERM;
// the process is ready once it listens.
func servePG(eng *session.Engine, addr, dataDir string, log *slog.Logger, sec *securityFlags, ep *endpoint) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	opts, err := sec.serverOptions(eng, ln.Addr(), log) // security.go
	if err != nil {
		ln.Close()
		return err
	}
	opts.Observer = ep.metrics.WatchPG()
	srv := wire.NewServer(backend{eng}, opts)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	ep.ready.Ready()
	log.Info("hummer serving", "pg-addr", ln.Addr().String(), "data-dir", dataDir)
	fmt.Fprintf(os.Stderr, "hummer is ready: psql -h %s -p %s -U hummer\n", host(ln.Addr()), port(ln.Addr()))
	if u := ep.dashboardURL(); u != "" {
		fmt.Fprintf(os.Stderr, "dashboard: %s\n", u)
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// jobManager runs the JobManager of a distributed cluster: the PostgreSQL
// frontend, the catalog, planning and scheduling; TaskManagers register with it
// on --rpc-addr and run the tasks.
func jobManager(args []string) error {
	fs, o := jobManagerFlags(flag.ExitOnError)
	fs.Parse(args)
	pgAddr, rpcAddr, resultAddr, heartbeatTimeout, dataDir, httpAddr, ckpt, sec, mem := o.pgAddr, o.rpcAddr, o.resultAddr,
		o.heartbeatTimeout, o.dataDir, o.httpAddr, o.ckpt, o.sec, o.mem
	if err := ckpt.check(); err != nil {
		return err
	}
	catalog, closeCatalog, err := o.catalog.open()
	if err != nil {
		return err
	}
	defer closeCatalog()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := applyMemoryLimit(*mem, log); err != nil {
		return err
	}
	// Ready once the catalog is loaded and its jobs resumed, or queued for
	// slots: requiring TaskManagers would keep a JobManager unready that they
	// find through a Service routing only to ready pods.
	ep := newEndpoint("loading the catalog and resuming jobs")
	stopHTTP, err := httpAddr.start(ep, true, sec, log)
	if err != nil {
		return err
	}
	defer stopHTTP()

	rpcHost, _, err := net.SplitHostPort(*rpcAddr)
	if err != nil {
		return fmt.Errorf("--rpc-addr: %w", err)
	}
	// Result rows come back from the TaskManagers on a data server beside the RPC port.
	if *resultAddr == "" {
		*resultAddr = net.JoinHostPort(rpcHost, "0")
	}
	data, err := network.Listen(network.ServerConfig{Addr: *resultAddr, Log: log})
	if err != nil {
		return err
	}
	defer data.Close()
	jm := jobmanager.New(log)
	ctl := control.NewJobManagerServer(control.JobManagerConfig{JM: jm, Data: data, Log: log, HeartbeatTimeout: *heartbeatTimeout})
	rpcLn, err := net.Listen("tcp", *rpcAddr)
	if err != nil {
		return err
	}
	go ctl.Serve(rpcLn)
	defer ctl.Close()
	log.Info("jobmanager accepting TaskManagers", "rpc-addr", rpcLn.Addr().String())

	unlock, err := lockDataDir(*dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	reg, tables := newRegistry()
	// Validate, not ValidateLocal: a file table's file is where the
	// TaskManagers run, which need not be here.
	eng, err := session.Open(session.Config{DataDir: *dataDir, Registry: reg, Validate: connectors.Validate,
		Unbounded: connectors.Unbounded, EstimateRows: connectors.EstimateRows, EstimateDistinct: connectors.EstimateDistinct, Upsert: connectors.Upsert, Retracts: connectors.Retracts, SourceWatermarks: connectors.SourceWatermarks, JobManager: jm, Log: log, OnClose: tables.Close,
		CheckpointURL: *ckpt.url, CheckpointInterval: *ckpt.interval, CatalogStore: catalog})
	if err != nil {
		return err
	}
	defer eng.Close()
	ep.attach(eng)
	return servePG(eng, *pgAddr, *dataDir, log, sec, ep)
}

// taskManager runs a TaskManager: it registers with the JobManager, heartbeats,
// and runs the tasks deployed to it in its slots; network channels of other
// TaskManagers arrive on --data-addr.
func taskManager(args []string) error {
	fs, o := taskManagerFlags(flag.ExitOnError)
	fs.Parse(args)
	jmAddr, slots, dataAddr, advertise, batch, networks, mem, httpAddr := o.jmAddr, o.slots, o.dataAddr, o.advertise,
		o.batch, o.networks, o.mem, o.httpAddr
	if *jmAddr == "" {
		return errors.New("taskmanager: --jobmanager is required")
	}
	if err := checkAdvertised(*dataAddr, *advertise); err != nil { // cluster.go
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := applyMemoryLimit(*mem, log); err != nil {
		return err
	}
	stateBackend, stateMemory, err := o.state.parse()
	if err != nil {
		return err
	}
	if *batch {
		if err := batchScheduling(); err != nil {
			log.Warn("threads stay under the default scheduling policy", "err", err)
		}
	}
	ep := newEndpoint("not registered with the JobManager")
	stopHTTP, err := httpAddr.start(ep, false, nil, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	data, err := network.Listen(network.ServerConfig{Addr: *dataAddr, Log: log})
	if err != nil {
		return err
	}
	defer data.Close()
	if *slots > 0 {
		// One slot is one core: a TaskManager of n slots runs on n cores, so
		// several TaskManagers on one host share its cores as their slots say.
		runtime.GOMAXPROCS(*slots)
	}
	named := map[string]*network.Server{}
	for name, addr := range networks {
		d, err := network.Listen(network.ServerConfig{Addr: addr, Log: log})
		if err != nil {
			return fmt.Errorf("--network %s: %w", name, err)
		}
		defer d.Close()
		named[name] = d
	}
	reg, _ := newRegistry()
	id := taskmanager.AdvertisedAddr(data.Addr(), *advertise)
	tm := taskmanager.New(taskmanager.Config{ID: id, Slots: *slots, Registry: reg, Data: data,
		Networks: named, Advertise: *advertise, Log: log.With("tm", id), StateBackend: stateBackend, StateMemory: stateMemory,
		NoTaskMetrics: !*o.taskMetrics})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ep.metrics.WatchTaskManager(len(tm.Slots()), func() bool { return ep.ready.Check() == nil })
	log.Info("taskmanager starting", "id", id, "jobmanager", *jmAddr, "slots", len(tm.Slots()))
	return control.RunTaskManager(ctx, control.TaskManagerConfig{JobManager: *jmAddr, TM: tm,
		Code: wire.SQLState, Log: log, Registered: func(ok bool) {
			if ok {
				ep.ready.Ready()
			} else {
				ep.ready.NotReady("not registered with the JobManager")
			}
		}})
}

// backend adapts the engine to the wire server.
type backend struct{ e *session.Engine }

func (b backend) NewSession(st session.Startup) (wire.Session, error) { return b.e.StartSession(st) }

func host(a net.Addr) string {
	h, _, _ := net.SplitHostPort(a.String())
	return h
}

func port(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}
