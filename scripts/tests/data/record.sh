#!/bin/sh
# Re-record the logs the offline parser tests read (real TCG boots; root).
#   scripts/tests/data/record.sh [KERNEL_IMAGE]
# truncated/ is derived from good/ (cut mid-dmesg / mid-line), see below.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vm=$here/../../ptwalk-vm
img=${1:-/boot/vmlinuz-6.1.0-56-amd64}
kdir=/usr/src/linux-headers-$(basename "$img" | sed 's/^vmlinuz-//')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$here/warnmod" "$tmp/"
make -s -C "$kdir" M="$tmp/warnmod" modules
rec() { # name timeout command [extra args]
	name=$1 t=$2 cmd=$3; shift 3
	"$vm" --kernel "$img" --name "$name" --accel tcg --no-default-files -q --timeout "$t" \
		--results "$tmp/runs" "$@" -- "$cmd" || true
	mkdir -p "$here/$name"
	for f in console.log channel.log stdout.log stderr.log meta.json; do
		sed "s|$tmp/runs/$name|RUN_DIR|g" "$tmp/runs/$name/$f" > "$here/$name/$f"
	done
}
rec good 120 'uname -r; echo "result line" > /results/out.txt; echo warn-to-stderr >&2; exit 0'
rec warn 120 'insmod /ptwalk/ptwalk_vm_warn.ko && echo loaded; echo data > /results/after-warn.txt' \
	--add "$tmp/warnmod/ptwalk_vm_warn.ko:/ptwalk/ptwalk_vm_warn.ko"
rec panic 120 'echo before-crash; echo c > /proc/sysrq-trigger; echo after-crash'
rec sysrq-l 120 'echo l > /proc/sysrq-trigger; sleep 1; echo done'
rec timeout 20 'echo sleeping; sleep 1000'
/usr/bin/python3 - "$here" <<'PY'
import json, sys
d = sys.argv[1]
ch = open(f"{d}/good/channel.log").read()
i = ch.index("@@ptwalk dmesg")
cut = ch.index("\n", i) + 1 + (ch.index("@@ptwalk end dmesg") - i) // 2 + 17
con = open(f"{d}/good/console.log").read()
import os
os.makedirs(f"{d}/truncated", exist_ok=True)
open(f"{d}/truncated/channel.log", "w").write(ch[:cut])
open(f"{d}/truncated/console.log", "w").write(con[: len(con) - 25])
open(f"{d}/truncated/stdout.log", "w").write(open(f"{d}/good/stdout.log").read()[:5])
open(f"{d}/truncated/stderr.log", "w").write("")
m = json.load(open(f"{d}/good/meta.json"))
m.update(kernel="truncated", qemu_returncode=None,
         recorded="derived from good/: logs cut to simulate a guest dying mid-output")
json.dump(m, open(f"{d}/truncated/meta.json", "w"), indent=1)
PY
