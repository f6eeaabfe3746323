// Package vmimage is issue 7's benchmark of Hummer's VM image (bench/cmd/image):
// how big an image is, and how long a VM takes from `hummer image run` to the
// first answered query under TCG, split into the boot's stages.
package vmimage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
)

// ResultsFile is the report's name in the results directory.
const ResultsFile = "image.json"

// The goals of issue 7, and the paper's figures they are set against.
const (
	GoalSizeMB    = 40.0
	GoalBootS     = 2.0
	PaperSizeMB   = 100.0
	PaperBootS    = 2.0
	goalSizeName  = "image size (kernel + initramfs)"
	goalBootName  = "launch to first answered query, median"
	goalBootName2 = "launch to first answered query, best"
)

// Report is one run of the benchmark: what results/image.json holds and what
// the README's image section is drawn from.
type Report struct {
	Date      string  `json:"date"`
	DurationS float64 `json:"duration_s"`
	Machine   Machine `json:"machine"`
	Setup     Setup   `json:"setup"`
	Images    []Image `json:"images"`
	Runs      []Run   `json:"runs"`
	Summary   []Row   `json:"summary"`
	Goals     []Goal  `json:"goals"`
}

// Machine describes the host and how busy it was while the VMs booted.
type Machine struct {
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	KVM      bool   `json:"kvm"` // whether KVM worked (then the runs used it)
	// LoadAvg and LoadAvgAfter are the 1-minute load averages before and
	// after the runs; StealS is what the hypervisor took from this machine's
	// CPUs meanwhile, and OtherCPUS the CPU time of every process but the VMs
	// (other engineers' builds and tests share the machine).
	LoadAvg      float64 `json:"load_avg"`
	LoadAvgAfter float64 `json:"load_avg_after"`
	RunsS        float64 `json:"runs_s"`
	StealS       float64 `json:"steal_s"`
	OtherCPUS    float64 `json:"other_cpu_s"`
}

// Setup is how the benchmark ran.
type Setup struct {
	Runs          int    `json:"runs"` // boots per variant, interleaved
	CPUs          int    `json:"cpus"`
	Memory        string `json:"memory"`
	Accel         string `json:"accel"`
	KernelVersion string `json:"kernel_version"`
	QEMU          string `json:"qemu"`
	Hummer        string `json:"hummer"`
	Role          string `json:"role"`
}

// Image is one variant's image: its build options and sizes.
type Image struct {
	Variant        string  `json:"variant"`
	Compression    string  `json:"compression"`
	ACPI           bool    `json:"acpi"`
	Kernel         string  `json:"kernel"` // its release
	KernelBytes    int64   `json:"kernel_bytes"`
	InitramfsBytes int64   `json:"initramfs_bytes"`
	BinaryBytes    int64   `json:"binary_bytes"`
	BuildS         float64 `json:"build_s"`
}

// SizeMB is the image's size on disk in MB (10^6 bytes).
func (i Image) SizeMB() float64 { return float64(i.KernelBytes+i.InitramfsBytes) / 1e6 }

// Run is one boot. Times are seconds from launching `hummer image run`;
// uptimes are the guest kernel's clock, from its start.
type Run struct {
	Variant string `json:"variant"`
	Round   int    `json:"round"`
	// FirstAnswerS: the first `SELECT 1` answered through the forwarded port.
	FirstAnswerS float64 `json:"first_answer_s"`
	// QEMUCPUS is the CPU time qemu had used by then (user + system): less
	// sensitive than wall time to other processes taking the cores.
	QEMUCPUS float64 `json:"qemu_cpu_s"`
	// KernelStartS is when the guest kernel's clock started (launch, firmware,
	// loading the kernel and initramfs, the kernel unpacking itself).
	KernelStartS float64 `json:"kernel_start_s"`
	// InitUptimeS is when hummer started as PID 1; RoleUptimeS when the role
	// started, modules loaded and network up.
	InitUptimeS float64 `json:"init_uptime_s"`
	RoleUptimeS float64 `json:"role_uptime_s"`
	// ReadyS is when the role said it serves (on the console).
	ReadyS float64 `json:"ready_s"`
	// WordCountS is the README's WordCount over kjv.txt, answered in the VM
	// (client-side wall time); checked against a Go count.
	WordCountS float64 `json:"wordcount_s"`
	// StopS is from SIGTERM to `hummer image run` until it exited; CleanStop
	// says it exited 0 with the init's "powering off" on the console.
	StopS     float64 `json:"stop_s"`
	CleanStop bool    `json:"clean_stop"`
	Err       string  `json:"err,omitempty"`
}

// Row summarises a variant's runs (medians, and the spread of the first answer).
type Row struct {
	Variant         string  `json:"variant"`
	SizeMB          float64 `json:"size_mb"`
	Runs            int     `json:"runs"`
	Failed          int     `json:"failed"`
	FirstAnswerS    float64 `json:"first_answer_s"`
	FirstAnswerMinS float64 `json:"first_answer_min_s"`
	FirstAnswerMaxS float64 `json:"first_answer_max_s"`
	QEMUCPUS        float64 `json:"qemu_cpu_s"`
	KernelStartS    float64 `json:"kernel_start_s"`
	InitUptimeS     float64 `json:"init_uptime_s"`
	RoleUptimeS     float64 `json:"role_uptime_s"`
	ReadyS          float64 `json:"ready_s"`
	WordCountS      float64 `json:"wordcount_s"`
	StopS           float64 `json:"stop_s"`
	CleanStops      int     `json:"clean_stops"`
}

// Goal is one of issue 7's targets and how a variant did.
type Goal struct {
	Name    string  `json:"name"`
	Target  string  `json:"target"`
	Variant string  `json:"variant"`
	Value   float64 `json:"value"`
	Pass    bool    `json:"pass"`
}

// ReadReport reads a report; a missing file is a nil report, not an error.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := new(Report)
	if err := json.Unmarshal(b, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Summarise computes Summary and Goals from Images and Runs.
func (r *Report) Summarise() {
	r.Summary, r.Goals = nil, nil
	for _, img := range r.Images {
		row := Row{Variant: img.Variant, SizeMB: round(img.SizeMB(), 1)}
		var first, cpu, kstart, initU, roleU, ready, wc, stop []float64
		for _, run := range r.Runs {
			if run.Variant != img.Variant {
				continue
			}
			row.Runs++
			if run.Err != "" {
				row.Failed++
				continue
			}
			first = append(first, run.FirstAnswerS)
			cpu = append(cpu, run.QEMUCPUS)
			kstart = append(kstart, run.KernelStartS)
			initU = append(initU, run.InitUptimeS)
			roleU = append(roleU, run.RoleUptimeS)
			ready = append(ready, run.ReadyS)
			wc = append(wc, run.WordCountS)
			stop = append(stop, run.StopS)
			if run.CleanStop {
				row.CleanStops++
			}
		}
		if len(first) > 0 {
			row.FirstAnswerS = round(median(first), 2)
			row.FirstAnswerMinS = round(slices.Min(first), 2)
			row.FirstAnswerMaxS = round(slices.Max(first), 2)
			row.QEMUCPUS = round(median(cpu), 2)
			row.KernelStartS = round(median(kstart), 2)
			row.InitUptimeS = round(median(initU), 2)
			row.RoleUptimeS = round(median(roleU), 2)
			row.ReadyS = round(median(ready), 2)
			row.WordCountS = round(median(wc), 2)
			row.StopS = round(median(stop), 2)
		}
		r.Summary = append(r.Summary, row)
		r.Goals = append(r.Goals,
			Goal{Name: goalSizeName, Target: fmt.Sprintf("≤ %.0f MB (paper: about %.0f MB)", GoalSizeMB, PaperSizeMB),
				Variant: img.Variant, Value: row.SizeMB, Pass: row.SizeMB <= GoalSizeMB},
			Goal{Name: goalBootName, Target: fmt.Sprintf("≤ %.0f s under TCG (paper: about %.0f s)", GoalBootS, PaperBootS),
				Variant: img.Variant, Value: row.FirstAnswerS, Pass: len(first) > 0 && row.FirstAnswerS <= GoalBootS},
			Goal{Name: goalBootName2, Target: fmt.Sprintf("≤ %.0f s", GoalBootS),
				Variant: img.Variant, Value: row.FirstAnswerMinS, Pass: len(first) > 0 && row.FirstAnswerMinS <= GoalBootS})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
