#!/bin/sh
# the stall table's commands, as run (with scripts/vm/stall-table.sh, since merged into
# scripts/vm/table-runs.sh: the lines below are the equivalent ones)
set -eu
scripts/ptwalk-stall-table --out /tmp/stall-table2
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.1.0-56-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko stall-table clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.12.95+deb12-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko stall-table clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/boot/vmlinuz-6.18.15+deb13-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M - stall-table clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/usr/lib/modules/7.3.4+deb13-cloud-amd64/vmlinuz --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko stall-table clear_refs smaps smaps_rollup pagemap pagemap_scan'
