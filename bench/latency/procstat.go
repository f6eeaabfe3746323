package latency

import "github.com/hummer-db/hummer/bench/procstat"

// The machine's figures come from the shared procstat package.
var (
	processCPU = procstat.ProcessCPU
	steal      = procstat.Steal
	cpuWait    = procstat.CPUWait
	selfCPU    = procstat.SelfCPU
	loadAvg    = procstat.LoadAvg
)
