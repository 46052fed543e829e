#ifndef NEARCAST_MEMORY_HINTS_H
#define NEARCAST_MEMORY_HINTS_H

/* Asks the CPU to bring the cache line at `p` in, without waiting for it and without faulting.
   (Swift has no prefetch of its own.) */
static inline __attribute__((always_inline)) void nc_prefetch(const void *p) { __builtin_prefetch(p, 0, 3); }

#endif
