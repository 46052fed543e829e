// libbpf for Swift (and statfs, to tell a bpffs). Only BPFKit imports this module (DESIGN.md §7).
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <sys/vfs.h>
