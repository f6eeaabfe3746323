package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// These read /proc as bench/latency's procstat.go does; that package keeps its
// helpers unexported, so the few needed here are repeated.

// userHZ is the unit of the CPU times in /proc: USER_HZ, 100 on every Linux that
// Go supports on amd64 and arm64.
const userHZ = 100

// processCPU returns the user plus system CPU time process pid has used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')') // the command name, field 2, may hold spaces
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// steal returns the time the hypervisor has stolen since boot, all cores
// summed, or -1 if it cannot be read.
func steal() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return -1
	}
	v, err := strconv.ParseInt(f[8], 10, 64)
	if err != nil {
		return -1
	}
	return time.Duration(v) * time.Second / userHZ
}

// cpuWait returns the time since boot during which some runnable task waited
// for a core (/proc/pressure/cpu, "some ... total=µs"), or -1 if the kernel
// does not keep it.
func cpuWait() time.Duration {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return -1
				}
				return time.Duration(us) * time.Microsecond
			}
		}
	}
	return -1
}

// selfCPU returns this process's CPU time: the broker, the producers and the
// consumers.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg returns the one-minute load average, or -1 if it cannot be read.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// Machine describes the computer and how busy it was while a part ran.
type Machine struct {
	CPUs     int     `json:"cpus"`
	CPUModel string  `json:"cpu_model"`
	Kernel   string  `json:"kernel"`
	LoadAvg  float64 `json:"loadavg_1m_before"`
	// Over RunsS of wall time: the bench process's CPU time (broker,
	// producers, consumers), Hummer's (every hummer process the part ran, as
	// far as they were alive when measured), the time some runnable task
	// waited for a core (-1 where the kernel does not say) and the time the
	// hypervisor stole.
	RunsS      float64 `json:"runs_s"`
	BenchCPUS  float64 `json:"bench_cpu_s"`
	HummerCPUS float64 `json:"hummer_cpu_s,omitempty"`
	CPUWaitS   float64 `json:"cpu_wait_s"`
	StealS     float64 `json:"steal_s"`
}

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), CPUModel: "unknown", LoadAvg: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if name, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "model name" {
				m.CPUModel = strings.TrimSpace(val)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// meter measures what the machine did while a part ran.
type meter struct {
	start             time.Time
	load              float64
	self, steal, wait time.Duration
	hummer            int // a hummer process to measure, 0 for none
	hummerCPU         time.Duration
}

func startMeter(hummer int) (*meter, error) {
	m := &meter{start: time.Now(), load: loadAvg(), self: selfCPU(), steal: steal(), wait: cpuWait(), hummer: hummer}
	if hummer != 0 {
		var err error
		if m.hummerCPU, err = processCPU(hummer); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *meter) done() Machine {
	out := readMachine()
	out.LoadAvg = m.load
	out.RunsS = round(time.Since(m.start).Seconds(), 1)
	out.BenchCPUS = round((selfCPU() - m.self).Seconds(), 1)
	if m.hummer != 0 {
		if c, err := processCPU(m.hummer); err == nil {
			out.HummerCPUS = round((c - m.hummerCPU).Seconds(), 1)
		}
	}
	out.StealS, out.CPUWaitS = -1, -1
	if s := steal(); s >= 0 && m.steal >= 0 {
		out.StealS = round((s - m.steal).Seconds(), 1)
	}
	if w := cpuWait(); w >= 0 && m.wait >= 0 {
		out.CPUWaitS = round((w - m.wait).Seconds(), 1)
	}
	return out
}
