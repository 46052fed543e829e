// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// The reflect ceiling that also grows the frame by one A record's answer (16 bytes), for the
// ns-per-packet benchmark: see reflect.bpf.c. Not part of nearcast.
#define REFLECT_GROW 16
#include "reflect.bpf.c"
