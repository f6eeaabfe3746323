package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// The roles' flag sets, built apart from running the roles: the Kubernetes
// manifests' args are checked against them (kubernetes_test.go).

// roleFlagSet returns the flag set of a role (serve, jobmanager or
// taskmanager), which returns parse errors.
func roleFlagSet(role string) (*flag.FlagSet, error) {
	switch role {
	case "serve":
		fs, _ := serveFlags(flag.ContinueOnError)
		return fs, nil
	case "jobmanager":
		fs, _ := jobManagerFlags(flag.ContinueOnError)
		return fs, nil
	case "taskmanager":
		fs, _ := taskManagerFlags(flag.ContinueOnError)
		return fs, nil
	}
	return nil, fmt.Errorf("unknown role %q: want serve, jobmanager or taskmanager", role)
}

// serveOptions are serve's flags.
type serveOptions struct {
	pgAddr, dataDir, initSQL, mem *string
	slots                         *int
	httpAddr                      httpOptions
	ckpt                          checkpointOptions
	catalog                       catalogOptions
	sec                           *securityFlags
	state                         stateOptions
	taskMetrics                   *bool
}

func serveFlags(onError flag.ErrorHandling) (*flag.FlagSet, *serveOptions) {
	fs := flag.NewFlagSet("serve", onError)
	o := &serveOptions{}
	o.pgAddr = fs.String("pg-addr", "127.0.0.1:4566", "address of the PostgreSQL wire server")
	o.dataDir = fs.String("data-dir", "./hummer-data", "directory keeping the catalog (unless --catalog-store) and the rows of the tables Hummer stores")
	o.initSQL = fs.String("init", "", "SQL statements to run once at start-up (e.g. sample tables)")
	o.slots = fs.Int("slots", 0, "task slots of the local TaskManager (0: one per core)")
	o.httpAddr = httpFlag(fs, defaultHTTPAddr, "the dashboard, /metrics, /healthz, /readyz")
	o.ckpt = checkpointFlags(fs)
	o.catalog = catalogFlag(fs)
	o.sec = addSecurityFlags(fs)
	o.mem = memoryFlag(fs)
	o.state = stateFlags(fs)
	o.taskMetrics = taskMetricsFlag(fs)
	return fs, o
}

// taskMetricsFlag is --task-metrics of serve and taskmanager.
func taskMetricsFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("task-metrics", true, "account each task's busy, idle and backpressured time and each operator's rows and time "+
		"(EXPLAIN ANALYZE, the dashboard, /metrics); false leaves only the rows and batches in and out (SHOW PROCESSLIST)")
}

// jobManagerOptions are jobmanager's flags.
type jobManagerOptions struct {
	pgAddr, rpcAddr, resultAddr, dataDir, mem *string
	heartbeatTimeout                          *time.Duration
	httpAddr                                  httpOptions
	ckpt                                      checkpointOptions
	catalog                                   catalogOptions
	sec                                       *securityFlags
}

func jobManagerFlags(onError flag.ErrorHandling) (*flag.FlagSet, *jobManagerOptions) {
	fs := flag.NewFlagSet("jobmanager", onError)
	o := &jobManagerOptions{}
	o.pgAddr = fs.String("pg-addr", "127.0.0.1:4566", "address of the PostgreSQL wire server")
	o.rpcAddr = fs.String("rpc-addr", "127.0.0.1:6123", "address TaskManagers register at (control plane)")
	o.resultAddr = fs.String("data-addr", "", "address TaskManagers send result rows to (default: --rpc-addr's host, any port; "+
		"behind a Service, a fixed port it forwards)")
	o.heartbeatTimeout = fs.Duration("heartbeat-timeout", 3*time.Second,
		"a TaskManager silent this long is declared lost and its jobs restart elsewhere")
	o.dataDir = fs.String("data-dir", "./hummer-data", "directory keeping the catalog (unless --catalog-store) and the rows of the tables Hummer stores")
	o.httpAddr = httpFlag(fs, defaultHTTPAddr, "the dashboard, /metrics, /healthz, /readyz")
	o.ckpt = checkpointFlags(fs)
	o.catalog = catalogFlag(fs)
	o.sec = addSecurityFlags(fs)
	o.mem = memoryFlag(fs)
	return fs, o
}

// taskManagerOptions are taskmanager's flags.
type taskManagerOptions struct {
	jmAddr, dataAddr, advertise, mem *string
	slots                            *int
	batch                            *bool
	networks                         map[string]string // --network NAME=ADDR
	httpAddr                         httpOptions
	state                            stateOptions
	taskMetrics                      *bool
}

func taskManagerFlags(onError flag.ErrorHandling) (*flag.FlagSet, *taskManagerOptions) {
	fs := flag.NewFlagSet("taskmanager", onError)
	o := &taskManagerOptions{networks: map[string]string{}}
	o.jmAddr = fs.String("jobmanager", "", "the JobManager's --rpc-addr")
	o.slots = fs.Int("slots", 0, "task slots (0: one per core)")
	fs.String("data-dir", "./hummer-data", "directory for the TaskManager's local state")
	o.dataAddr = fs.String("data-addr", "127.0.0.1:0", "address other TaskManagers send network channels to")
	o.advertise = fs.String("advertise-addr", "", "the host or IP other TaskManagers reach this one at when --data-addr "+
		"listens on every interface (0.0.0.0:PORT); in Kubernetes the pod's IP, from the downward API")
	o.batch = fs.Bool("sched-batch", true, "run the process's threads under Linux's SCHED_BATCH policy with 12 ms time slices: a woken thread does not preempt a running task (sched_linux.go)")
	fs.Func("network", "a further network NAME=ADDR for jobs that SET network = 'NAME' (repeatable)", func(v string) error {
		name, addr, ok := strings.Cut(v, "=")
		if !ok || name == "" || addr == "" {
			return fmt.Errorf("want NAME=ADDR, got %q", v)
		}
		o.networks[name] = addr
		return nil
	})
	o.mem = memoryFlag(fs)
	o.httpAddr = httpFlag(fs, "", "/metrics, /healthz, /readyz")
	o.state = stateFlags(fs)
	o.taskMetrics = taskMetricsFlag(fs)
	return fs, o
}

// checkpointOptions are the flags of serve and jobmanager for checkpoints.
type checkpointOptions struct {
	url      *string
	interval *time.Duration
}

func checkpointFlags(fs *flag.FlagSet) checkpointOptions {
	return checkpointOptions{
		url: fs.String("checkpoint-store", "", "where continuous jobs keep checkpoints: a bucket URL "+
			"(file:///dir, s3://bucket/prefix?region=R[&endpoint=URL]; default <data-dir>/checkpoints); every TaskManager must reach it"),
		interval: fs.Duration("checkpoint-interval", time.Second, "time between checkpoints of a continuous job "+
			"(a session changes it with SET checkpoint_interval)"),
	}
}

// catalogOptions is the flag of serve and jobmanager for the catalog's store.
type catalogOptions struct{ url *string }

// catalogFlag is --catalog-store. It does not default to --checkpoint-store:
// every TaskManager holds that bucket's credentials, and the catalog holds
// the users' password verifiers, which only the JobManager needs to reach.
func catalogFlag(fs *flag.FlagSet) catalogOptions {
	return catalogOptions{url: fs.String("catalog-store", "", "where the catalog (tables, views, users, jobs to resume) lives: "+
		"a bucket URL as --checkpoint-store's holding one object, catalog.json (default <data-dir>/catalog.json); "+
		"an empty store starts from <data-dir>'s catalog. Stored tables' rows stay in --data-dir")}
}
