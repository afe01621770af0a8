#!/bin/sh
# the stall table's commands, as run
set -eu
scripts/ptwalk-stall-table --out /tmp/stall-table2
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.1.0-56-cloud-amd64 --clock icount --add scripts/vm/stall-table.sh:/ptwalk/scripts/vm/stall-table.sh -- 'sh /ptwalk/scripts/vm/stall-table.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.12.95+deb12-cloud-amd64 --clock icount --add scripts/vm/stall-table.sh:/ptwalk/scripts/vm/stall-table.sh -- 'sh /ptwalk/scripts/vm/stall-table.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/boot/vmlinuz-6.18.15+deb13-cloud-amd64 --clock icount --add scripts/vm/stall-table.sh:/ptwalk/scripts/vm/stall-table.sh -- 'sh /ptwalk/scripts/vm/stall-table.sh /ptwalk/build/ptwalk /results 256M - clear_refs smaps smaps_rollup pagemap pagemap_scan'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/usr/lib/modules/7.3.4+deb13-cloud-amd64/vmlinuz --clock icount --add scripts/vm/stall-table.sh:/ptwalk/scripts/vm/stall-table.sh -- 'sh /ptwalk/scripts/vm/stall-table.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko clear_refs smaps smaps_rollup pagemap pagemap_scan'
