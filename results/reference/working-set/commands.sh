#!/bin/sh
# the working-set table's commands, as run
set -eu
scripts/ptwalk-working-set-table --host --out /tmp/wstab2
sh scripts/vm/table-runs.sh build/ptwalk /tmp/wstab2/host 256M - working-set 0.25,hot 0.25,drift 0.5,uniform damon:0.25,hot damon:0.25,drift damon:0.5,uniform
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.1.0-56-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko working-set 0.25,hot 0.25,drift 0.5,uniform damon:0.25,hot damon:0.25,drift damon:0.5,uniform'
scripts/ptwalk-vm run --kernel /boot/vmlinuz-6.12.95+deb12-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko working-set 0.25,hot 0.25,drift 0.5,uniform damon:0.25,hot damon:0.25,drift damon:0.5,uniform'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/boot/vmlinuz-6.18.15+deb13-cloud-amd64 --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M - working-set 0.25,hot 0.25,drift 0.5,uniform damon:0.25,hot damon:0.25,drift damon:0.5,uniform'
scripts/ptwalk-vm run --kernel /var/lib/ptwalk/kernels/usr/lib/modules/7.3.4+deb13-cloud-amd64/vmlinuz --clock icount --add scripts/vm/table-runs.sh:/ptwalk/scripts/vm/table-runs.sh -- 'sh /ptwalk/scripts/vm/table-runs.sh /ptwalk/build/ptwalk /results 256M /ptwalk/module/ptwalk.ko working-set 0.25,hot 0.25,drift 0.5,uniform damon:0.25,hot damon:0.25,drift damon:0.5,uniform'
