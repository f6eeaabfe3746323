package main

import (
	"bufio"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/hummer-db/hummer/session"
)

// memoryFlag adds --memory to serve, jobmanager and taskmanager: the process's
// soft memory limit (Go's GOMEMLIMIT), which has the collector work harder as
// the heap nears it instead of letting it grow past what the machine or the
// container allows.
func memoryFlag(fs *flag.FlagSet) *string {
	return fs.String("memory", "", "soft memory limit of the process, e.g. 2GiB or 512MB "+
		"(default: $GOMEMLIMIT, else 90% of the cgroup's memory limit, else none)")
}

// stateOptions are the flags of serve and taskmanager for operator state.
type stateOptions struct {
	backend, memory *string
}

func stateFlags(fs *flag.FlagSet) stateOptions {
	return stateOptions{
		backend: fs.String("state-backend", "memory", "where continuous jobs keep operator state by default: memory, or disk "+
			"(pebble, in --state-memory; SET state_backend chooses per job)"),
		memory: fs.String("state-memory", "256MiB", "memory the disk state backend keeps state in, shared by the slots"),
	}
}

// parse returns the default backend and the state memory in bytes.
func (o stateOptions) parse() (string, int64, error) {
	if *o.backend != "memory" && *o.backend != "disk" {
		return "", 0, fmt.Errorf("--state-backend: %q, want memory or disk", *o.backend)
	}
	n, err := session.ParseSize(*o.memory, 1)
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("--state-memory: %q, want a size such as 256MiB", *o.memory)
	}
	return *o.backend, n, nil
}

// applyMemoryLimit sets the soft memory limit from --memory (flagValue), or,
// without it and without GOMEMLIMIT (which the runtime applies itself), to 90%
// of the cgroup's limit when the process runs under one, leaving the rest for
// what the Go heap does not count (stacks, the read buffers' kernel pages).
func applyMemoryLimit(flagValue string, log *slog.Logger) error {
	var limit int64
	switch {
	case flagValue != "":
		n, err := session.ParseSize(flagValue, 1)
		if err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
		limit = n
	case os.Getenv("GOMEMLIMIT") != "":
		return nil
	default:
		n, ok := cgroupMemoryLimit("/sys/fs/cgroup", "/proc/self/cgroup")
		if !ok {
			return nil
		}
		limit = n / 10 * 9
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit", "bytes", limit)
	return nil
}

// cgroupMemoryLimit returns the memory limit of the cgroup the process runs
// in, read under root (the cgroup file system) for the paths in procCgroup
// (/proc/self/cgroup): cgroup v2's memory.max, else v1's
// memory.limit_in_bytes; ok is false when there is none (or it is "max", or
// v1's stand-in for none, a number near 2^63).
func cgroupMemoryLimit(root, procCgroup string) (int64, bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var candidates []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			candidates = append(candidates, filepath.Join(root, parts[2], "memory.max"))
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			candidates = append(candidates, filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes"))
		}
	}
	candidates = append(candidates, filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes"))
	for _, c := range candidates {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(data))
		if v == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}
