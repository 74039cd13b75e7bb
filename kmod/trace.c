// SPDX-License-Identifier: GPL-2.0
/* rdmashare: the tracepoints (trace.h) are defined here. */
#define CREATE_TRACE_POINTS
#include "trace.h"
