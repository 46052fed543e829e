// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Prints where each source line of a loaded BPF program starts in its JITed code: one line per
// line-info record, "ADDRESS<TAB>FILE:LINE<TAB>SOURCE" (ADDRESS the kernel address, in hex), in
// address order, from the kernel's jited_line_info and the program's BTF. tools/profile-xdp-program.sh
// puts perf's samples on source lines with it: Debian's perf and bpftool have no libbfd, so
// neither annotates a JITed program.
//
//   jit-lines PROG_ID
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct row {
	__u64 addr;
	const char *file, *line;
	__u32 line_no;
};

static int by_addr(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s PROG_ID\n", argv[0]);
		return 2;
	}
	int fd = bpf_prog_get_fd_by_id((__u32)strtoul(argv[1], NULL, 10));

	if (fd < 0) {
		perror("bpf_prog_get_fd_by_id");
		return 1;
	}
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		perror("bpf_obj_get_info_by_fd");
		return 1;
	}
	__u32 n = info.nr_jited_line_info;

	if (!n || n != info.nr_line_info || !info.btf_id) {
		fprintf(stderr, "program %s has no JITed line info (not JITed, or loaded without BTF)\n", argv[1]);
		return 1;
	}
	__u32 rec = info.line_info_rec_size;
	__u64 *addrs = calloc(n, sizeof(*addrs));
	char *lines = calloc(n, rec);
	__u32 btf_id = info.btf_id;

	memset(&info, 0, sizeof(info));
	info.nr_jited_line_info = n;
	info.jited_line_info_rec_size = sizeof(__u64);
	info.jited_line_info = (__u64)(unsigned long)addrs;
	info.nr_line_info = n;
	info.line_info_rec_size = rec;
	info.line_info = (__u64)(unsigned long)lines;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		perror("bpf_obj_get_info_by_fd (line info)");
		return 1;
	}
	struct btf *btf = btf__load_from_kernel_by_id(btf_id);

	if (!btf) {
		perror("btf__load_from_kernel_by_id");
		return 1;
	}
	struct row *rows = calloc(n, sizeof(*rows));

	for (__u32 i = 0; i < n; i++) {
		const struct bpf_line_info *l = (const void *)(lines + (size_t)i * rec);
		const char *file = btf__name_by_offset(btf, l->file_name_off);
		const char *src = btf__name_by_offset(btf, l->line_off);
		const char *slash = file ? strrchr(file, '/') : NULL;

		rows[i] = (struct row){ addrs[i], slash ? slash + 1 : (file ? file : "?"), src ? src : "",
					BPF_LINE_INFO_LINE_NUM(l->line_col) };
	}
	qsort(rows, n, sizeof(*rows), by_addr);
	for (__u32 i = 0; i < n; i++) {
		const char *s = rows[i].line;

		while (*s == ' ' || *s == '\t')
			s++;
		printf("%llx\t%s:%u\t%s\n", (unsigned long long)rows[i].addr, rows[i].file, rows[i].line_no, s);
	}
	return 0;
}
