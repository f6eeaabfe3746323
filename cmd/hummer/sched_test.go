//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTaskManagerBatchScheduling: every thread of a TaskManager runs under
// SCHED_BATCH with time slices of batchSlice (sched_linux.go), threads the
// runtime started before the policy was set and after alike; --sched-batch=false
// leaves them all under the default policy.
func TestTaskManagerBatchScheduling(t *testing.T) {
	bin := buildHummer(t)
	for _, c := range []struct {
		flag   string
		policy string // /proc's number: SCHED_OTHER 0, SCHED_BATCH 3
	}{{"--sched-batch=true", "3"}, {"--sched-batch=false", "0"}} {
		// No JobManager listens there: the TaskManager keeps trying to reach it.
		tm := startKillable(t, bin, "taskmanager", c.flag, "--jobmanager", freeAddr(t), "--slots", "1",
			"--data-dir", t.TempDir())
		waitUntil(t, "the TaskManager to start", tm.exited, func() bool {
			return strings.Contains(tm.logs.String(), "taskmanager starting")
		})
		policies, err := threadPolicies(tm.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if len(policies) < 2 {
			t.Fatalf("%s: %d threads, want the runtime's several", c.flag, len(policies))
		}
		for tid, p := range policies {
			if p != c.policy {
				t.Errorf("%s: thread %s has scheduling policy %s, want %s", c.flag, tid, p, c.policy)
			}
			if c.policy != "3" {
				continue
			}
			// The scheduler's debugging file, where the kernel has one.
			sched, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/sched", tm.cmd.Process.Pid, tid))
			if err != nil {
				continue
			}
			want := fmt.Sprint(batchSlice.Nanoseconds())
			for _, line := range strings.Split(string(sched), "\n") {
				if name, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "se.slice" && strings.TrimSpace(v) != want {
					t.Errorf("%s: thread %s has time slices of %s ns, want %s", c.flag, tid, strings.TrimSpace(v), want)
				}
			}
		}
	}
}

// threadPolicies returns the scheduling policy of each thread of process pid,
// by thread id: field 41 of /proc/PID/task/TID/stat (proc(5)).
func threadPolicies(pid int) (map[string]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	policies := map[string]string{}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
		if err != nil {
			return nil, err
		}
		// The command name (field 2) is in parentheses and may hold spaces.
		_, rest, ok := strings.Cut(string(stat), ") ")
		fields := strings.Fields(rest)
		if !ok || len(fields) < 41-2 {
			return nil, fmt.Errorf("thread %s: unexpected stat %q", task.Name(), stat)
		}
		policies[task.Name()] = fields[41-3]
	}
	return policies, nil
}
