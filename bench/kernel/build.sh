#!/usr/bin/env bash
# Builds a kernel for Hummer's VM image and nothing else (Lupine Linux's idea):
# Debian's linux-source-6.1, `make tinyconfig`, then hummer.config beside this
# script (everything built in, no modules, no ACPI). It lays the result out as an
# unpacked kernel package, which `hummer image build --kernel DIR` takes:
#   DIR/boot/vmlinuz-<release>, DIR/boot/config-<release>
# Usage: bench/kernel/build.sh DIR   (about ten minutes on 2 cores; needs root for apt-get)
set -euo pipefail
out=${1:?usage: build.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
need=()
[ -f /usr/src/linux-source-6.1.tar.xz ] || need+=(linux-source-6.1)
for tool in bison flex bc make gcc; do command -v $tool >/dev/null || need+=($tool); done
[ -f /usr/include/libelf.h ] || need+=(libelf-dev)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xf /usr/src/linux-source-6.1.tar.xz
src="$work/linux-source-6.1"
make -C "$src" ARCH=x86_64 tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" "$here/hummer.config" >/dev/null
make -C "$src" ARCH=x86_64 olddefconfig >/dev/null
# Every line of hummer.config must have survived olddefconfig (a dependency
# missing would drop it silently).
while IFS= read -r line; do
  case "$line" in \#*|"") continue ;; esac
  sym=${line%%=*}; val=${line#*=}
  if [ "$val" = n ]; then
    grep -q "^$sym=" "$src/.config" && { echo "build.sh: $sym is still set" >&2; exit 1; }
  else
    grep -qx "$line" "$src/.config" || { echo "build.sh: $line did not take: $(grep "$sym[= ]" "$src/.config" || echo unset)" >&2; exit 1; }
  fi
done < "$here/hummer.config"
make -C "$src" ARCH=x86_64 -j"$(nproc)" bzImage >/dev/null
release=$(make -s -C "$src" ARCH=x86_64 kernelrelease)
mkdir -p "$out/boot"
cp "$src/arch/x86/boot/bzImage" "$out/boot/vmlinuz-$release"
cp "$src/.config" "$out/boot/config-$release"
echo "$out/boot/vmlinuz-$release ($(stat -c %s "$out/boot/vmlinuz-$release") bytes)"
