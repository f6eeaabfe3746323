package checkpoint

import (
	"runtime"
	"time"

	"github.com/hummer-db/hummer/bench/procstat"
)

// The machine's figures come from the shared procstat package.
var (
	processCPU = procstat.ProcessCPU
	cpuWait    = procstat.CPUWait
	selfCPU    = procstat.SelfCPU
	loadAvg    = procstat.LoadAvg
)

// steal returns the time the hypervisor has stolen since boot, all cores
// summed, or -1 if it cannot be read.
func steal() time.Duration {
	d, err := procstat.Steal()
	if err != nil {
		return -1
	}
	return d
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
	return Machine{CPUs: runtime.NumCPU(), CPUModel: procstat.CPUModel(), Kernel: procstat.KernelRelease(), LoadAvg: loadAvg()}
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
