#!/bin/sh
# ptwalk-vm guest /init (busybox ash). Generated initramfs only; never run on a host.
#
# Serial ports (qemu -serial order):
#   ttyS0  kernel console (prose, for humans and the oops detector)
#   ttyS1  result channel: framed, base64 records (see ptwalk_vm/parse.py)
#   ttyS2  raw stdout of the command
#   ttyS3  raw stderr of the command
# The command sees pipes, not ttys, on stdout/stderr (like CI).

export PATH=/ptwalk/build:/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root TERM=dumb PTWALK_VM=1

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /sys/kernel/debug /sys/kernel/tracing /sys/fs/cgroup
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mkdir -p /results
hostname ptwalk-vm
ip link set lo up 2>/dev/null

CH=/dev/ttyS1
for t in /dev/ttyS1 /dev/ttyS2 /dev/ttyS3; do
	stty -F "$t" raw -echo 2>/dev/null
done

. /etc/ptwalk-vm/env

# Framing: "@@ptwalk <kind> [arg]" opens a record; base64 records end with
# "@@ptwalk end <kind>". "@@ptwalk done" is the last line of a complete run.
uptime_s() { cut -d' ' -f1 /proc/uptime; }
send_b64() { # kind name < data; sent gzip'ed (the serial port is slow)
	echo "@@ptwalk $1 $2 gz"
	gzip -c | base64
	echo "@@ptwalk end $1"
}

exec 3>"$CH"
echo "@@ptwalk begin 1" >&3
echo "@@ptwalk release $(uname -r)" >&3
echo "@@ptwalk boot_uptime $(uptime_s)" >&3

if [ -n "$PTWALK_MODPROBE" ]; then
	for m in $PTWALK_MODPROBE; do
		modprobe "$m" || echo "ptwalk-vm: modprobe $m failed" >/dev/console
	done
fi

# Command stdout/stderr go through fifos to their own serial ports.
mkfifo /tmp/.out /tmp/.err
cat /tmp/.out >/dev/ttyS2 &
p_out=$!
cat /tmp/.err >/dev/ttyS3 &
p_err=$!

# Hang watchdog: shortly before the host kills qemu, dump blocked tasks
# (sysrq w) and every CPU's backtrace (sysrq l) to the console so a timeout
# is diagnosable from console.log. It stays armed until poweroff: a guest
# that hangs after the command (unloading, sending results) is dumped too.
if [ -n "$PTWALK_HANG_DUMP_S" ]; then
	(
		sleep "$PTWALK_HANG_DUMP_S"
		echo "ptwalk-vm: guest still running after ${PTWALK_HANG_DUMP_S}s (phase: $(cat /tmp/.phase 2>/dev/null)); sysrq w, l" >/dev/kmsg
		echo w >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
	) &
	p_dog=$!
fi
echo command >/tmp/.phase

echo "@@ptwalk start_uptime $(uptime_s)" >&3
cd /ptwalk
/bin/sh /etc/ptwalk-vm/cmd.sh >/tmp/.out 2>/tmp/.err </dev/null
rc=$?
cd /
echo "drain output" >/tmp/.phase
echo "@@ptwalk end_uptime $(uptime_s)" >&3
echo "@@ptwalk status $rc" >&3
# Wait for the copiers to drain the fifos. A background process the command
# left behind keeps them open: give up once nothing moves for 2 s.
alive() { [ -r /proc/$1/status ] && ! grep -q '^State:.*zombie' /proc/$1/status; }
last="" idle=0
while alive $p_out || alive $p_err; do
	now=$(grep -h wchar /proc/$p_out/io /proc/$p_err/io 2>/dev/null | tr '\n' ' ')
	if [ "$now" = "$last" ]; then idle=$((idle + 1)); else idle=0 last=$now; fi
	if [ $idle -ge 20 ]; then
		kill $p_out $p_err 2>/dev/null
		echo "ptwalk-vm: processes left by the command hold stdout/stderr open; output after exit dropped" >/dev/console
		break
	fi
	usleep 100000
done
wait $p_out $p_err 2>/dev/null

echo "send results" >/tmp/.phase
dmesg -r | send_b64 dmesg - >&3
find /results -type f | while read -r f; do
	name=$(printf '%s' "${f#/results/}" | base64 | tr -d '\n')
	send_b64 file "$name" <"$f" >&3
done
echo "@@ptwalk done" >&3
exec 3>&-
echo poweroff >/tmp/.phase
sync
[ -n "$p_dog" ] && kill "$p_dog" 2>/dev/null
poweroff -f
