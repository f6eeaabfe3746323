package vmimage

import (
	"fmt"
	pathpkg "path"
	"strings"
)

// Readme renders the README's section on the VM image from r.
func (r *Report) Readme(resultsDir string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	m, s := r.Machine, r.Setup
	p("## VM image: size, and launch to first answered query under TCG (issue 7)")
	p("")
	p("<!-- From %s, written by bench/cmd/image (the section is bench/vmimage/readme.go). -->", pathpkg.Join(resultsDir, ResultsFile))
	p("")
	accel := "TCG (no usable KVM on this machine: qemu emulates every instruction)"
	if m.KVM {
		accel = "KVM"
	}
	p("Run of %s on %d x %s, Linux %s; %s. Guest: Debian's kernel %s, %d vCPU, %s; %d boots per variant, the variants interleaved; %.0f s in all.",
		r.Date, m.CPUs, m.CPUModel, m.Kernel, accel, s.KernelVersion, s.CPUs, s.Memory, s.Runs, r.DurationS)
	p("**The machine is shared**: while the VMs booted (%.0f s), other processes used %.1f CPU s (%.0f%% of its %d cores), the hypervisor stole %.1f s, and the load average went from %.2f to %.2f. "+
		"A VM under TCG needs a whole core, so a busy machine stretches its boot: qemu's own CPU time up to the first answer (a column below) moves far less than wall time.",
		m.RunsS, m.OtherCPUS, 100*m.OtherCPUS/(m.RunsS*float64(max(m.CPUs, 1))+1e-9), m.CPUs, m.StealS, m.LoadAvg, m.LoadAvgAfter)
	p("")
	p("| variant | image MB | first answer s, median (min–max) | qemu CPU s | kernel starts s | PID 1 at (uptime s) | role at (uptime s) | serving s | WordCount s | stop s | clean stops |")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, row := range r.Summary {
		if row.Runs == row.Failed {
			p("| %s | %.1f | failed (%d runs) | | | | | | | | |", row.Variant, row.SizeMB, row.Runs)
			continue
		}
		failed := ""
		if row.Failed > 0 {
			failed = fmt.Sprintf(" (%d of %d failed)", row.Failed, row.Runs)
		}
		p("| %s%s | %.1f | %.2f (%.2f–%.2f) | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %d/%d |", row.Variant, failed, row.SizeMB,
			row.FirstAnswerS, row.FirstAnswerMinS, row.FirstAnswerMaxS, row.QEMUCPUS, row.KernelStartS, row.InitUptimeS,
			row.RoleUptimeS, row.ReadyS, row.WordCountS, row.StopS, row.CleanStops, row.Runs-row.Failed)
	}
	p("")
	p("| goal | target | %s |", strings.Join(variants(r), " | "))
	p("| --- | --- |%s", strings.Repeat(" ---: |", len(r.Images)))
	for _, name := range []string{goalSizeName, goalBootName, goalBootName2} {
		target, cells := "", []string{}
		for _, v := range variants(r) {
			cell := ""
			for _, g := range r.Goals {
				if g.Name == name && g.Variant == v {
					target = g.Target
					value := fmt.Sprintf("%.2f s", g.Value)
					if name == goalSizeName {
						value = fmt.Sprintf("%.1f MB", g.Value)
					}
					cell = value + " " + map[bool]string{true: "✅", false: "❌"}[g.Pass]
				}
			}
			cells = append(cells, cell)
		}
		p("| %s | %s | %s |", name, target, strings.Join(cells, " | "))
	}
	p("")
	p("What the columns are, each from launching `hummer image run DIR --pg-port P` (seconds) or from the guest kernel's clock (uptime):")
	p("")
	p("- **first answer**: a client opens a new connection every 25 ms through the forwarded port and sends `SELECT 1`; the first answer ends the measurement. (New connections rather than one retried: qemu's user networking holds a connection made before the guest listens and retries its SYN only seconds later.)")
	p("- **kernel starts**: launch until the guest kernel's clock starts (console time of the init's first line minus its uptime): qemu, SeaBIOS, loading the kernel and initramfs, the kernel unpacking itself. **PID 1 at**: the kernel's own boot, the initramfs unpacked, hummer running as the init. **role at**: modules loaded, network up, the role starting in PID 1. **serving**: the role's `hummer is ready` on the console.")
	p("- **WordCount**: the README's WordCount over kjv.txt (`%s`), answered by the VM and checked against a Go count; under TCG the engine runs several times slower than on the host.", s.Role)
	p("- **stop**: SIGTERM to `hummer image run` until it exits: it presses Ctrl-Alt-Del through QMP (the ACPI power button for an `--acpi` image), the init stops the role and ends the VM. A clean stop exits 0 with the init's `powering off` on the console.")
	p("")
	p("Variants: **lz4** is what `hummer image build` makes by default (Debian's cloud kernel, lz4 initramfs, no ACPI); **gzip** the same with a gzip initramfs; **+acpi** keeps ACPI (`--acpi`: a power button and a real power-off); **+custom** swaps Debian's kernel for one built by `bench/kernel/build.sh` from Debian's linux-source-6.1 with `bench/kernel/hummer.config` (tinyconfig plus the serial console, the initramfs, virtio-net, IPv4 and what the Go runtime calls, all built in, and the PVH entry point: no modules, no ACPI, no mitigations or tracing to patch in at boot), given to `image build --kernel DIR`.")
	p("")
	p("Where the time goes, from the kernel's log with timestamps (an image prints it with `image build --cmdline \"loglevel=7 hummer.dmesg\"`; add `initcall_debug` for each initcall) and Go's `GODEBUG=inittrace=1` (a `--cmdline` parameter with `=` that the kernel does not know reaches the init as an environment variable): with Debian's kernel, about 0.2 s passes before the kernel's clock starts: qemu, SeaBIOS, and qemu loading the kernel's 53 MB ELF image through its PVH entry point (booted as the bzImage, the decompressor it would emulate took 0.2 s more). The kernel then takes about 1 s to start the init: 0.17 s of early setup, 0.18 s patching alternatives into its text for the emulated CPU, 0.55 s of initcalls with the initramfs unpacked beside them, 0.1 s freeing its init memory. Go's runtime and package initialisers take 0.22 s before the init's first line (the TiDB parser's, kafka-go's and gRPC's are the largest); loading the virtio modules and configuring the network 0.12 s; the role serves 0.05 s after it starts, and the first query is answered about 0.08 s later. With `--acpi`, the ACPI interpreter and interrupt routing add about 0.2 s; a gzip initramfs takes 0.25 s longer to unpack than lz4. The custom kernel starts its clock sooner (a 16 MB ELF image to load, mostly zeros) and reaches the init about 0.1 s earlier with far less to patch and initialise.")
	p("")
	p("Already cut, and why it mattered under TCG: the kernel's decompressor (`image run` boots a kernel built with `CONFIG_PVH` from its ELF image, unpacked once into the kernel cache by `image build`; 0.2 s), transparent huge pages for qemu's guest memory (`image run` turns them off under TCG: each first touch zeroed 2 MiB, 0.3 s of qemu system time and 0.2 s of boot), zeroing every kernel allocation (Debian's `init_on_alloc`, 0.1-0.3 s), rewriting the kernel's LOCK prefixes for one CPU (`noreplace-smp`, 0.1 s), 6 MB of the hummer binary (build tags `grpcnotrace` and `arrow_json_stdlib`: text/template's reflection kept every method alive), the kernel's crypto self-tests, kdf108 self-test and kprobe events, module signature checks (the modules are stripped of them at build: apt verified the package), a second Go runtime (the role runs in PID 1), the kernel's random pool waiting a second for jitter entropy (the guest CPU gets RDRAND), ACPI (by default; with it, qemu's PCI hotplug tables are left out), qemu's default devices and the NIC's option ROM. Tried without a gain worth keeping: `nokaslr`, blacklisting more initcalls (certificates, quotas, the block tracer), `lsm=`, `audit=0`, `cgroup_disable=memory`, a guest CPU without fast string instructions, qboot (does not boot this kernel), two vCPUs. An uncompressed initramfs boots the custom kernel about 0.1 s sooner but makes a 46 MB image, over the 40 MB goal.")
	p("")
	p("```sh")
	p("bench/kernel/build.sh /tmp/hk                # the custom kernel (a few minutes; apt-get installs linux-source-6.1 and the build tools)")
	p("cd bench && go run ./cmd/image -repo .. -variants lz4,gzip,lz4+acpi,lz4+custom -custom-kernel /tmp/hk")
	p("                                             # builds a static hummer and the images, boots each variant -runs times (10), writes %s", pathpkg.Join(resultsDir, ResultsFile))
	p("cd bench && go run ./cmd/wordcount -render results/latest.json   # then redraw this README")
	p("```")
	p("")
	return b.String()
}

func variants(r *Report) []string {
	var v []string
	for _, img := range r.Images {
		v = append(v, img.Variant)
	}
	return v
}
