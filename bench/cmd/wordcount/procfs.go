package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hummer-db/hummer/bench/procstat"
)

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100 on every
// Linux that Go supports on amd64 and arm64 (sysconf(_SC_CLK_TCK) would need cgo).
const userHZ = 100

// procCPU returns the user plus system CPU time that process pid has used so far,
// summed over all its threads.
var procCPU = procstat.ProcessCPU

// resetPeakRSS sets process pid's peak RSS (VmHWM) back to its current RSS, so the
// next reading is the peak of what runs in between.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// procMem returns process pid's current RSS (VmRSS) and peak RSS (VmHWM) in bytes.
func procMem(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		name, val, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS or VmHWM", pid)
	}
	return rss, peak, nil
}

// sumCPU returns the CPU time that the processes pids have used so far, summed.
func sumCPU(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		cpu, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		sum += cpu
	}
	return sum, nil
}

// sumMem returns the RSS and the peak RSS of the processes pids, each summed. The sum
// of peaks bounds the peak of the sum from above: the processes need not peak at once.
func sumMem(pids []int) (rss, peak int64, err error) {
	for _, pid := range pids {
		r, p, err := procMem(pid)
		if err != nil {
			return 0, 0, err
		}
		rss, peak = rss+r, peak+p
	}
	return rss, peak, nil
}

// machine describes the computer the benchmark ran on.
type machine struct {
	CPUs     int     `json:"cpus"`
	CPUModel string  `json:"cpu_model"`
	MemGiB   float64 `json:"mem_gib"`
	Kernel   string  `json:"kernel"`
	LoadAvg  float64 `json:"loadavg_1m_before"`

	// Other work on the machine skews figures: OtherCPUS is the CPU time that
	// processes other than the benchmark's used while the runs went on (RunsS of
	// wall time), StealS the time the hypervisor gave to other guests.
	RunsS     float64 `json:"runs_s"`
	OtherCPUS float64 `json:"other_cpu_s"`
	StealS    float64 `json:"steal_s"`

	// RSSFloorMiB is the peak RSS that bench/cmd/measure reports for /bin/true: the
	// least it can report for any program.
	RSSFloorMiB float64 `json:"rss_floor_mib"`

	// Scaling is the machine's own, around the engines' runs (probe.go).
	Scaling *scaling `json:"scaling,omitempty"`
}

func readMachine(cpus int) machine {
	m := machine{CPUs: cpus, CPUModel: procstat.CPUModel(), Kernel: procstat.KernelRelease()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if val, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 64)
				m.MemGiB = round(kb/(1<<20), 1)
			}
		}
	}
	return m
}

// loadAvg returns the one-minute load average, or -1 if it cannot be read.
var loadAvg = procstat.LoadAvg

// cpuTimes is the machine's CPU time since boot, all cores summed.
type cpuTimes struct {
	busy  time.Duration // user, nice, system, irq, softirq
	steal time.Duration
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	tick := func(i int) time.Duration {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(v) * time.Second / userHZ
	}
	return cpuTimes{busy: tick(1) + tick(2) + tick(3) + tick(6) + tick(7), steal: tick(8)}, nil
}

// ownCPU returns the CPU time of this process and of every descendant it has reaped
// (the contenders, through bench/cmd/measure, which reaps them in turn).
func ownCPU() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// otherWork measures the CPU time that processes other than this one, its children
// and the Hummer servers use between its creation and a call to done.
type otherWork struct {
	start   time.Time
	servers []int
	cpu     cpuTimes
	own     time.Duration
}

func startOtherWork(servers []int) (*otherWork, error) {
	w := &otherWork{start: time.Now(), servers: servers, own: ownCPU()}
	srv, err := sumCPU(servers)
	if err != nil {
		return nil, err
	}
	w.own += srv
	if w.cpu, err = readCPUTimes(); err != nil {
		return nil, err
	}
	return w, nil
}

// done returns the wall time elapsed, the other processes' CPU time and the steal time.
func (w *otherWork) done() (elapsed, other, steal time.Duration, err error) {
	cpu, err := readCPUTimes()
	if err != nil {
		return 0, 0, 0, err
	}
	srv, err := sumCPU(w.servers)
	if err != nil {
		return 0, 0, 0, err
	}
	own := ownCPU() + srv - w.own
	return time.Since(w.start), max(cpu.busy-w.cpu.busy-own, 0), cpu.steal - w.cpu.steal, nil
}
