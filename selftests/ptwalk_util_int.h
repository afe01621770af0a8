/* SPDX-License-Identifier: GPL-2.0 */
/*
 * For the helpers' own files (ptwalk_{sys,map,proc,budget,target}.c):
 * the libc headers they use and the constants older libcs lack.
 */
#ifndef PTWALK_UTIL_INT_H
#define PTWALK_UTIL_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ptwalk_util.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

#endif /* PTWALK_UTIL_INT_H */
