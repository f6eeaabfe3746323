// Command image is issue 7's benchmark of the VM image (package bench/vmimage):
// it builds a static hummer and an image per variant with kjv.txt inside, boots
// each -runs times with `hummer image run` under TCG (KVM when it works), and
// measures the image's size, the time from launch to the first answered query
// with its stages, the README's WordCount inside the VM, and the stop. It writes
// results/image.json; bench/cmd/wordcount puts its section into README.md.
//
// Run it from bench/: go run ./cmd/image -repo ..
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hummer-db/hummer/bench/counts"
	"github.com/hummer-db/hummer/bench/procstat"
	benchrepo "github.com/hummer-db/hummer/bench/repo"
	"github.com/hummer-db/hummer/bench/vmimage"
)

// wordCount is the README's WordCount.
const wordCount = "SELECT word, COUNT(*) AS n FROM (SELECT unnest(string_split(lower(line), ' ')) AS word FROM docs) AS t WHERE word <> '' GROUP BY word"

// hummerBuildTags are the build tags of the Makefile (GOFLAGS there) and of
// `hummer image build`, which the static binary is built with, as an image
// would be.
const hummerBuildTags = "grpcnotrace,arrow_json_stdlib"

// variant is one way to build the image.
type variant struct {
	name, compress string
	acpi           bool
	custom         bool     // with the -custom-kernel
	params         []string // more kernel parameters (+k:NAME=VALUE)
}

func parseVariant(s string) (variant, error) {
	v := variant{name: s}
	parts := strings.Split(s, "+")
	v.compress = parts[0]
	for _, p := range parts[1:] {
		switch p {
		case "acpi":
			v.acpi = true
		case "custom":
			v.custom = true
		default:
			param, ok := strings.CutPrefix(p, "k:")
			if !ok || param == "" {
				return v, fmt.Errorf("variant %q: want COMPRESSION[+acpi][+custom][+k:PARAM...]", s)
			}
			v.params = append(v.params, param)
		}
	}
	return v, nil
}

func main() {
	repo := flag.String("repo", "..", "the Hummer repository (cmd/hummer is built from it with CGO_ENABLED=0)")
	hummer := flag.String("hummer", "", "a static hummer binary to use instead of building one")
	kernel := flag.String("kernel", "", "passed to hummer image build --kernel (default: Debian's cloud kernel)")
	custom := flag.String("custom-kernel", "", "the kernel of +custom variants (bench/kernel/build.sh DIR makes one)")
	runs := flag.Int("runs", 10, "boots per variant")
	variantsFlag := flag.String("variants", "lz4,gzip,lz4+acpi", "images to compare: COMPRESSION[+acpi][+custom][+k:KERNEL_PARAM...], the first is the default image")
	cpus := flag.Int("cpus", 1, "vCPUs of the VM")
	memory := flag.String("memory", "1G", "memory of the VM")
	results := flag.String("results", "results", "directory for image.json")
	work := flag.String("work", "", "scratch directory (default: a temporary one, removed after)")
	flag.Parse()
	var vs []variant
	for _, s := range strings.Split(*variantsFlag, ",") {
		v, err := parseVariant(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, "image:", err)
			os.Exit(2)
		}
		if v.custom && *custom == "" {
			fmt.Fprintln(os.Stderr, "image: +custom variants need -custom-kernel")
			os.Exit(2)
		}
		vs = append(vs, v)
	}
	if err := run(*repo, *hummer, *kernel, *custom, *work, *results, vs, *runs, *cpus, *memory); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "image: "+format+"\n", args...)
}

func run(repo, hummer, kernel, custom, work, results string, vs []variant, runs, cpus int, memory string) error {
	start := time.Now()
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "hummer-image-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	if hummer == "" {
		hummer = filepath.Join(work, "hummer")
		progress("CGO_ENABLED=0 go build -o %s ./cmd/hummer (in %s)", hummer, repo)
		cmd := exec.Command("go", "build", "-tags", hummerBuildTags, "-trimpath", "-ldflags", "-s -w", "-o", hummer, "./cmd/hummer")
		cmd.Dir, cmd.Stdout, cmd.Stderr = repo, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building cmd/hummer: %w", err)
		}
	}
	kjv := filepath.Join(repo, "data", "kjv.txt")
	ref, err := counts.Reference(kjv)
	if err != nil {
		return err
	}
	want := counts.Of(ref)

	rep := &vmimage.Report{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Machine: readMachine()}
	initSQL := "CREATE TABLE docs (line TEXT) ENGINE=file CONNECTION='file:///data/kjv.txt'"
	rep.Setup = vmimage.Setup{Runs: runs, CPUs: cpus, Memory: memory, Accel: "tcg", Hummer: benchrepo.Version(repo), QEMU: qemuVersion(),
		Role: "serve --init \"" + initSQL + "\" with kjv.txt at /data/kjv.txt"}
	if rep.Machine.KVM {
		rep.Setup.Accel = "kvm"
	}
	dirs := map[string]string{}
	for _, v := range vs {
		dir := filepath.Join(work, "img-"+strings.ReplaceAll(v.name, "+", "-"))
		args := []string{"image", "build", "--out", dir, "--compress", v.compress, "--add", kjv + ":/data/kjv.txt"}
		if v.acpi {
			args = append(args, "--acpi")
		}
		if len(v.params) > 0 {
			args = append(args, "--cmdline", strings.Join(v.params, " "))
		}
		switch {
		case v.custom:
			args = append(args, "--kernel", custom)
		case kernel != "":
			args = append(args, "--kernel", kernel)
		}
		args = append(args, "--", "serve", "--init", initSQL)
		t0 := time.Now()
		if out, err := exec.Command(hummer, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("hummer image build (%s): %v\n%s", v.name, err, out)
		}
		var m struct {
			KernelVersion  string `json:"kernel_version"`
			Compression    string `json:"compression"`
			KernelBytes    int64  `json:"kernel_bytes"`
			InitramfsBytes int64  `json:"initramfs_bytes"`
			BinaryBytes    int64  `json:"binary_bytes"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "image.json"))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		if !v.custom {
			rep.Setup.KernelVersion = m.KernelVersion
		}
		img := vmimage.Image{Variant: v.name, Compression: m.Compression, ACPI: v.acpi, Kernel: m.KernelVersion, KernelBytes: m.KernelBytes,
			InitramfsBytes: m.InitramfsBytes, BinaryBytes: m.BinaryBytes, BuildS: round(time.Since(t0).Seconds(), 2)}
		rep.Images = append(rep.Images, img)
		dirs[v.name] = dir
		progress("%s: %.1f MB (kernel %.1f + initramfs %.1f)", v.name, img.SizeMB(), float64(m.KernelBytes)/1e6, float64(m.InitramfsBytes)/1e6)
	}

	meter := startMeter()
	var vmCPU time.Duration
	for round := 1; round <= runs; round++ {
		for _, v := range vs {
			r, cpu := boot(hummer, dirs[v.name], cpus, memory, want)
			r.Variant, r.Round = v.name, round
			vmCPU += cpu
			rep.Runs = append(rep.Runs, r)
			if r.Err != "" {
				progress("%s #%d: %s", v.name, round, r.Err)
				continue
			}
			progress("%s #%d: first answer %.2f s (qemu CPU %.2f s; kernel at %.2f s, PID 1 at uptime %.2f, role at %.2f; serving %.2f s), WordCount %.2f s, stop %.2f s%s",
				v.name, round, r.FirstAnswerS, r.QEMUCPUS, r.KernelStartS, r.InitUptimeS, r.RoleUptimeS, r.ReadyS, r.WordCountS, r.StopS,
				map[bool]string{true: "", false: " (not clean)"}[r.CleanStop])
		}
	}
	meter.done(&rep.Machine, vmCPU)
	rep.DurationS = round(time.Since(start).Seconds(), 0)
	rep.Summarise()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return err
	}
	path := filepath.Join(results, vmimage.ResultsFile)
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	progress("wrote %s; `go run ./cmd/wordcount -render results/latest.json` redraws the README", path)
	for _, row := range rep.Summary {
		fmt.Printf("%-10s %5.1f MB  first answer %.2f s (%.2f–%.2f), qemu CPU %.2f s, WordCount %.2f s, stop %.2f s, clean %d/%d\n",
			row.Variant, row.SizeMB, row.FirstAnswerS, row.FirstAnswerMinS, row.FirstAnswerMaxS, row.QEMUCPUS, row.WordCountS, row.StopS,
			row.CleanStops, row.Runs-row.Failed)
	}
	return nil
}

// boot boots one VM and measures it; it returns the run and qemu's CPU time.
func boot(hummer, dir string, cpus int, memory string, want counts.Digest) (vmimage.Run, time.Duration) {
	var r vmimage.Run
	port, err := freePort()
	if err != nil {
		r.Err = err.Error()
		return r, 0
	}
	cmd := exec.Command(hummer, "image", "run", dir, "--pg-port", strconv.Itoa(port), "--cpus", strconv.Itoa(cpus), "--memory", memory)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.Err = err.Error()
		return r, 0
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Err = err.Error()
		return r, 0
	}
	con := &console{start: start}
	scanned := make(chan struct{})
	go func() {
		con.read(stdout)
		close(scanned)
	}()
	exited := make(chan struct{})
	var exitErr error // once exited is closed
	go func() {
		<-scanned
		exitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, answered, err := firstAnswer(ctx, port, exited)
	if err != nil {
		r.Err = fmt.Sprintf("no answer: %v; console:\n%s", err, con.text())
		return r, 0
	}
	r.FirstAnswerS = round(answered.Sub(start).Seconds(), 3)
	var cpu time.Duration
	if q := qemuPID(cmd.Process.Pid); q > 0 {
		cpu = processCPU(q)
		r.QEMUCPUS = round(cpu.Seconds(), 3)
	}
	defer conn.Close(context.Background())

	t0 := time.Now()
	rows, err := conn.Query(ctx, wordCount)
	if err == nil {
		var d counts.Digest
		for rows.Next() {
			var w string
			var n int64
			if err = rows.Scan(&w, &n); err != nil {
				break
			}
			d.Add(w, n)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err == nil && d != want {
			err = fmt.Errorf("WordCount digest %v, want %v", d, want)
		}
	}
	if err != nil {
		r.Err = "WordCount: " + err.Error()
		return r, cpu
	}
	r.WordCountS = round(time.Since(t0).Seconds(), 3)
	conn.Close(context.Background())

	t0 = time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		r.StopS = round(time.Since(t0).Seconds(), 3)
		r.CleanStop = exitErr == nil && strings.Contains(con.text(), `msg="powering off"`)
	case <-time.After(time.Minute):
		r.Err = "the VM did not stop within a minute of SIGTERM"
	}
	r.KernelStartS, r.InitUptimeS, r.RoleUptimeS, r.ReadyS = con.stages()
	return r, cpu
}

// firstAnswer opens a new connection every 25 ms until one answers SELECT 1,
// and returns it. Each attempt gives up after half a second: qemu's user
// networking accepts on the host at once, and holds a connection made before
// the guest listens for seconds (until it retransmits its SYN), so an attempt
// that waited longer would measure qemu's retransmission timer, and many held
// at once delay the ones that come after.
// It returns when the answer came: the attempts still under way when one wins
// take a moment to give up.
func firstAnswer(ctx context.Context, port int, exited <-chan struct{}) (*pgx.Conn, time.Time, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	url := fmt.Sprintf("postgres://hummer@127.0.0.1:%d/hummer?sslmode=disable", port)
	type answer struct {
		c  *pgx.Conn
		at time.Time
	}
	won := make(chan answer, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	inflight := make(chan struct{}, 40)
	for {
		select {
		case a := <-won:
			return a.c, a.at, nil
		case <-exited:
			return nil, time.Time{}, errors.New("hummer image run exited")
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-tick.C:
		}
		select {
		case inflight <- struct{}{}:
		default:
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-inflight }()
			actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer acancel()
			c, err := pgx.Connect(actx, url)
			if err != nil {
				return
			}
			var one int
			if err := c.QueryRow(actx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				c.Close(context.Background())
				return
			}
			select {
			case won <- answer{c, time.Now()}:
			default:
				c.Close(context.Background())
			}
		}()
	}
}

// console keeps the VM's console lines with the time each arrived.
type console struct {
	start time.Time
	mu    sync.Mutex
	lines []string
	at    []time.Duration
}

func (c *console) read(r interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		c.at = append(c.at, time.Since(c.start))
		c.mu.Unlock()
	}
}

func (c *console) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

var uptimeRE = regexp.MustCompile(`uptime=([0-9.]+)`)

// stages reads the boot's stages off the console: when the kernel's clock
// started (the init's first line's arrival minus its uptime), the uptimes of
// the init and of the role, and when the role said it serves.
func (c *console) stages() (kernelStart, initUp, roleUp, ready float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.lines {
		m := uptimeRE.FindStringSubmatch(l)
		switch {
		case strings.Contains(l, `msg="hummer image booting"`) && m != nil:
			initUp, _ = strconv.ParseFloat(m[1], 64)
			kernelStart = c.at[i].Seconds() - initUp
		case strings.Contains(l, `msg="role starting"`) && m != nil:
			roleUp, _ = strconv.ParseFloat(m[1], 64)
		case strings.Contains(l, "hummer is ready") && ready == 0:
			ready = c.at[i].Seconds()
		}
	}
	return round(kernelStart, 3), round(initUp, 3), round(roleUp, 3), round(ready, 3)
}

// qemuPID finds the qemu child of `hummer image run`.
func qemuPID(parent int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(comm), "qemu") {
				return pid
			}
		}
	}
	return 0
}

// clockTicks is USER_HZ, what /proc counts CPU time in (100 on Linux).
const clockTicks = 100

// processCPU is a process's user + system time.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / clockTicks
}

// cpuTimes returns the machine's busy and steal time from /proc/stat.
func cpuTimes() (busy, steal time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var v [8]int64
	for i := 0; i < 8 && i+1 < len(f); i++ {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return tick(v[0] + v[1] + v[2] + v[5] + v[6]), tick(v[7])
}

type meter struct {
	start       time.Time
	busy, steal time.Duration
	self        time.Duration
}

func startMeter() *meter {
	m := &meter{start: time.Now(), self: processCPU(os.Getpid())}
	m.busy, m.steal = cpuTimes()
	return m
}

// done fills in how busy the machine was, less the VMs (vm) and this process.
func (m *meter) done(out *vmimage.Machine, vm time.Duration) {
	busy, steal := cpuTimes()
	self := processCPU(os.Getpid()) - m.self
	out.RunsS = round(time.Since(m.start).Seconds(), 1)
	out.StealS = round((steal - m.steal).Seconds(), 1)
	out.OtherCPUS = round(max(0, (busy-m.busy-vm-self).Seconds()), 1)
	out.LoadAvgAfter = loadAvg()
}

func readMachine() vmimage.Machine {
	m := vmimage.Machine{CPUs: runtime.NumCPU(), CPUModel: procstat.CPUModel(), Kernel: procstat.KernelRelease(), LoadAvg: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.KVM = regexp.MustCompile(`\b(vmx|svm)\b`).Match(b)
	}
	if _, err := os.Stat("/dev/kvm"); err != nil {
		m.KVM = false
	}
	return m
}

// loadAvg returns the one-minute load average, or -1 if it cannot be read.
var loadAvg = procstat.LoadAvg

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func qemuVersion() string {
	out, err := exec.Command("qemu-system-x86_64", "--version").Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}
