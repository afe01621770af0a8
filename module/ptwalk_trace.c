// SPDX-License-Identifier: GPL-2.0
/* ptwalk: instantiate the ptwalk:* tracepoints (see ptwalk_trace.h). */
#include <linux/module.h>

#define CREATE_TRACE_POINTS
#include "ptwalk_trace.h"
