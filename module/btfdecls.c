// SPDX-License-Identifier: GPL-2.0
/*
 * btfdecls: a host program of the module's build (Kbuild hostprogs), run
 * before decls.c is compiled. It writes decls-generated.h, which gives
 * decls.c, for each function symlist.h names, the prototype the target
 * kernel's BTF records for it, so that the compiler compares it with the
 * type the module calls the function with. The functions mm/ keeps in its
 * private headers are declared nowhere a module build can see; the BTF of
 * vmlinux carries the prototype of every function the kernel defines.
 *
 * Usage: btfdecls [-f BTF]... NAME...
 *        btfdecls [-f BTF]... -q QUERY
 * Each -f names a candidate BTF: raw (/sys/kernel/btf/vmlinux) or an ELF
 * file with a .BTF section (the vmlinux that Debian's headers for 6.12 and
 * 7.x ship, holding only .BTF, for the BTF of modules). The first one
 * readable is used; with none, the header holds the header-only checks.
 * Says on stderr which check it prepared. Exits non-zero only on bad
 * usage, no memory or a failed write: a missing or unreadable BTF
 * degrades to the header-only check, never to a failed build.
 *
 * -q answers one question of a feature probe (probe.sh, probes/NAME.btf)
 * instead, for what a headers package cannot show but the BTF records:
 * "member STRUCT MEMBER" (whether struct STRUCT has MEMBER) or "args
 * FUNCTION N" (whether FUNCTION takes N arguments). It prints "yes BTF" or
 * "no BTF", or "none WHY" when no BTF is readable or the BTF cannot say
 * (the function is not in it, or has two prototypes).
 *
 * BTF and ELF are read as little-endian: the module supports x86-64 and
 * arm64, both little-endian, and so are the machines that build for them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* include/uapi/linux/btf.h, not included: the host may lack it. */
#define BTF_MAGIC	0xeB9F
#define BTF_KIND_INT		1
#define BTF_KIND_PTR		2
#define BTF_KIND_ARRAY		3
#define BTF_KIND_STRUCT		4
#define BTF_KIND_UNION		5
#define BTF_KIND_ENUM		6
#define BTF_KIND_FWD		7
#define BTF_KIND_TYPEDEF	8
#define BTF_KIND_VOLATILE	9
#define BTF_KIND_CONST		10
#define BTF_KIND_RESTRICT	11
#define BTF_KIND_FUNC		12
#define BTF_KIND_FUNC_PROTO	13
#define BTF_KIND_VAR		14
#define BTF_KIND_DATASEC	15
#define BTF_KIND_FLOAT		16
#define BTF_KIND_DECL_TAG	17
#define BTF_KIND_TYPE_TAG	18
#define BTF_KIND_ENUM64		19
#define BTF_FUNC_GLOBAL		1

#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif

/* Deeper than any real type: a loop in a corrupt BTF ends here. */
#define MAX_DEPTH	64

struct btf {
	const unsigned char *types;
	size_t types_len;
	const char *strs;
	size_t strs_len;
	const unsigned char **type;	/* by type id, from 1 */
	uint32_t n;
};

static char err[256];		/* why the last BTF could not be read */

static uint16_t le16(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t le32(const unsigned char *p)
{
	return le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const unsigned char *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void *xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "btfdecls: out of memory\n");
		exit(2);
	}
	return p;
}

/* A string formatted into new memory. */
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0) {
		fprintf(stderr, "btfdecls: out of memory\n");
		exit(2);
	}
	va_end(ap);
	return s;
}

/* @len bytes at @off of @f, or NULL. */
static unsigned char *read_at(FILE *f, uint64_t off, uint64_t len)
{
	unsigned char *buf;

	if (len > 1UL << 30 || fseeko(f, off, SEEK_SET)) {
		snprintf(err, sizeof(err), "bad offset or size");
		return NULL;
	}
	buf = xalloc(len);
	if (fread(buf, 1, len, f) != len) {
		snprintf(err, sizeof(err), "short read");
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * The .BTF section of a 64-bit little-endian ELF file, read alone: a
 * kernel tree's vmlinux with its DWARF can be a gigabyte.
 */
static unsigned char *elf_btf(FILE *f, size_t *btf_len)
{
	unsigned char eh[64], *sh, *names, *btf = NULL;
	uint64_t shoff, stroff, strsize, off;
	unsigned int shentsize, shnum, shstrndx, i;

	if (fread(eh, 1, sizeof(eh), f) != sizeof(eh) || eh[4] != 2 ||
	    eh[5] != 1) {
		snprintf(err, sizeof(err), "not a 64-bit little-endian ELF file");
		return NULL;
	}
	shoff = le64(eh + 40);
	shentsize = le16(eh + 58);
	shnum = le16(eh + 60);
	shstrndx = le16(eh + 62);
	if (shentsize < 64 || shstrndx >= shnum) {
		snprintf(err, sizeof(err), "bad ELF section headers");
		return NULL;
	}
	sh = read_at(f, shoff, (uint64_t)shnum * shentsize);
	if (!sh)
		return NULL;
	stroff = le64(sh + shstrndx * shentsize + 24);
	strsize = le64(sh + shstrndx * shentsize + 32);
	names = read_at(f, stroff, strsize);
	for (i = 0; names && i < shnum; i++) {
		off = le32(sh + i * shentsize);
		if (off >= strsize || strsize - off < 5 ||
		    memcmp(names + off, ".BTF", 5))
			continue;
		*btf_len = le64(sh + i * shentsize + 32);
		btf = read_at(f, le64(sh + i * shentsize + 24), *btf_len);
		break;
	}
	if (names && i == shnum)
		snprintf(err, sizeof(err), "no .BTF section");
	free(names);
	free(sh);
	return btf;
}

/* The BTF in @path, raw or an ELF file's .BTF section, or NULL. */
static unsigned char *read_btf(const char *path, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	unsigned char *buf = NULL;
	FILE *f = fopen(path, "rb");

	if (!f) {
		snprintf(err, sizeof(err), "%s", strerror(errno));
		return NULL;
	}
	buf = xalloc(cap);
	n = fread(buf, 1, 4, f);
	if (n == 4 && !memcmp(buf, "\177ELF", 4)) {
		free(buf);
		rewind(f);
		buf = elf_btf(f, len);
		fclose(f);
		return buf;
	}
	/* Raw: /sys/kernel/btf/vmlinux, whose size stat() may not tell. */
	for (;;) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
		if (!buf) {
			fprintf(stderr, "btfdecls: out of memory\n");
			exit(2);
		}
	}
	if (ferror(f)) {
		snprintf(err, sizeof(err), "read error");
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The size of the data following a type's 12-byte header, or -1. */
static long extra_size(unsigned int kind, unsigned int vlen)
{
	switch (kind) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return 12;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_DATASEC:
	case BTF_KIND_ENUM64:
		return 12L * vlen;
	case BTF_KIND_ENUM:
	case BTF_KIND_FUNC_PROTO:
		return 8L * vlen;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	}
	return -1;
}

static bool btf_parse(struct btf *b, const unsigned char *d, size_t len)
{
	uint32_t hdr_len, type_off, type_len, str_off, str_len, cap = 1024;
	size_t pos;

	if (len < 24 || le16(d) != BTF_MAGIC || d[2] != 1) {
		snprintf(err, sizeof(err), "not little-endian BTF version 1");
		return false;
	}
	hdr_len = le32(d + 4);
	type_off = le32(d + 8);
	type_len = le32(d + 12);
	str_off = le32(d + 16);
	str_len = le32(d + 20);
	if (hdr_len < 24 || hdr_len > len ||
	    type_off > len - hdr_len || type_len > len - hdr_len - type_off ||
	    str_off > len - hdr_len || str_len > len - hdr_len - str_off ||
	    !str_len || d[hdr_len + str_off + str_len - 1]) {
		snprintf(err, sizeof(err), "bad BTF header");
		return false;
	}
	b->types = d + hdr_len + type_off;
	b->types_len = type_len;
	b->strs = (const char *)d + hdr_len + str_off;
	b->strs_len = str_len;
	b->type = xalloc(cap * sizeof(*b->type));
	b->n = 0;
	for (pos = 0; pos < type_len;) {
		const unsigned char *t = b->types + pos;
		uint32_t info;
		long extra;

		if (type_len - pos < 12) {
			snprintf(err, sizeof(err), "truncated BTF type");
			return false;
		}
		info = le32(t + 4);
		extra = extra_size(info >> 24 & 0x1f, info & 0xffff);
		if (extra < 0 || (size_t)extra > type_len - pos - 12) {
			snprintf(err, sizeof(err),
				 "BTF type %u: unknown kind %u or truncated",
				 b->n + 1, info >> 24 & 0x1f);
			return false;
		}
		if (b->n + 1 >= cap) {
			cap *= 2;
			b->type = realloc(b->type, cap * sizeof(*b->type));
			if (!b->type) {
				fprintf(stderr, "btfdecls: out of memory\n");
				exit(2);
			}
		}
		b->type[++b->n] = t;
		pos += 12 + extra;
	}
	return true;
}

static const unsigned char *type_of(const struct btf *b, uint32_t id)
{
	return id && id <= b->n ? b->type[id] : NULL;
}

static unsigned int kind_of(const unsigned char *t)
{
	return le32(t + 4) >> 24 & 0x1f;
}

static const char *name_of(const struct btf *b, const unsigned char *t)
{
	uint32_t off = le32(t);

	return off < b->strs_len ? b->strs + off : "";
}

/* The struct and union names a prototype uses, declared ahead of it. */
static char **tags;
static unsigned int ntags;

static void add_tag(const char *tag)
{
	unsigned int i;

	for (i = 0; i < ntags; i++)
		if (!strcmp(tags[i], tag))
			return;
	tags = realloc(tags, (ntags + 1) * sizeof(*tags));
	if (!tags) {
		fprintf(stderr, "btfdecls: out of memory\n");
		exit(2);
	}
	tags[ntags++] = strdup(tag);
}

/*
 * A typedef of an anonymous struct, union or enum (pte_t, swp_entry_t) is
 * spelled by its name, which the kernel's headers define; any other is
 * spelled as what it stands for, which needs no header at all.
 */
static bool keep_typedef(const struct btf *b, const unsigned char *t)
{
	const unsigned char *u = type_of(b, le32(t + 8));
	unsigned int k;

	if (!u)
		return false;
	k = kind_of(u);
	return (k == BTF_KIND_STRUCT || k == BTF_KIND_UNION ||
		k == BTF_KIND_ENUM || k == BTF_KIND_ENUM64) && !*name_of(b, u);
}

/* Whether a pointer to @id needs parentheses: (*f)(...), (*a)[n]. */
static bool needs_parens(const struct btf *b, uint32_t id, bool canon)
{
	const unsigned char *t;
	int depth;

	for (depth = 0; depth < MAX_DEPTH; depth++) {
		t = type_of(b, id);
		if (!t)
			return false;
		switch (kind_of(t)) {
		case BTF_KIND_FUNC_PROTO:
		case BTF_KIND_ARRAY:
			return true;
		case BTF_KIND_TYPEDEF:
			if (!canon || keep_typedef(b, t))
				return false;
			fallthrough;
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = le32(t + 8);
			break;
		default:
			return false;
		}
	}
	return false;
}

/*
 * Type @id as C, declaring @inner ("" for a type name). canon: spelled
 * for the compiler (typedefs resolved, see keep_typedef()); else as the
 * kernel's source spells it, for people. NULL if it cannot be spelled.
 */
static char *render(const struct btf *b, uint32_t id, const char *inner,
		    bool canon, int depth)
{
	const char *sp = *inner ? " " : "";
	const unsigned char *t;
	const char *name;
	char *s, *in, *params;
	unsigned int i, vlen;

	if (!id)
		return fmt("void%s%s", sp, inner);
	t = type_of(b, id);
	if (!t || depth > MAX_DEPTH)
		return NULL;
	name = name_of(b, t);
	vlen = le32(t + 4) & 0xffff;
	switch (kind_of(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_FLOAT:
		return fmt("%s%s%s", name, sp, inner);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
	case BTF_KIND_FWD:
		if (!*name)
			return NULL;
		s = fmt("%s %s", kind_of(t) == BTF_KIND_UNION ||
			(kind_of(t) == BTF_KIND_FWD && le32(t + 4) >> 31) ?
			"union" : "struct", name);
		if (canon)
			add_tag(s);
		in = fmt("%s%s%s", s, sp, inner);
		free(s);
		return in;
	case BTF_KIND_ENUM:
	case BTF_KIND_ENUM64:
		return *name ? fmt("enum %s%s%s", name, sp, inner) : NULL;
	case BTF_KIND_TYPEDEF:
		if (!canon || keep_typedef(b, t))
			return fmt("%s%s%s", name, sp, inner);
		return render(b, le32(t + 8), inner, canon, depth + 1);
	case BTF_KIND_TYPE_TAG:
		return render(b, le32(t + 8), inner, canon, depth + 1);
	case BTF_KIND_CONST:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_RESTRICT:
		in = fmt("%s%s%s", kind_of(t) == BTF_KIND_CONST ? "const" :
			 kind_of(t) == BTF_KIND_VOLATILE ? "volatile" :
			 "restrict", sp, inner);
		s = render(b, le32(t + 8), in, canon, depth + 1);
		free(in);
		return s;
	case BTF_KIND_PTR:
		in = fmt(needs_parens(b, le32(t + 8), canon) ? "(*%s)" : "*%s",
			 inner);
		s = render(b, le32(t + 8), in, canon, depth + 1);
		free(in);
		return s;
	case BTF_KIND_ARRAY:
		in = fmt("%s[%u]", inner, le32(t + 20));
		s = render(b, le32(t + 12), in, canon, depth + 1);
		free(in);
		return s;
	case BTF_KIND_FUNC:
		return render(b, le32(t + 8), inner, canon, depth + 1);
	case BTF_KIND_FUNC_PROTO:
		params = fmt("%s", vlen ? "" : "void");
		for (i = 0; i < vlen; i++) {
			const unsigned char *p = t + 12 + 8 * i;
			char *ps, *joined;

			if (i == vlen - 1 && !le32(p) && !le32(p + 4))
				ps = fmt("...");
			else
				ps = render(b, le32(p + 4), "", canon,
					    depth + 1);
			if (!ps) {
				free(params);
				return NULL;
			}
			joined = fmt("%s%s%s", params, i ? ", " : "", ps);
			free(params);
			free(ps);
			params = joined;
		}
		in = fmt("%s(%s)", inner, params);
		free(params);
		s = render(b, le32(t + 8), in, canon, depth + 1);
		free(in);
		return s;
	}
	return NULL;
}

/*
 * The FUNC named @name: the global one where static functions of the same
 * name exist too. 0 if none, or if two disagree on the prototype (then
 * *ambiguous is set).
 */
static uint32_t find_func(const struct btf *b, const char *name,
			  bool *ambiguous)
{
	uint32_t id, found = 0;
	char *proto = NULL;
	bool global = false;

	*ambiguous = false;
	for (id = 1; id <= b->n; id++) {
		const unsigned char *t = b->type[id];
		bool g = (le32(t + 4) & 0xffff) == BTF_FUNC_GLOBAL;
		char *p;

		if (kind_of(t) != BTF_KIND_FUNC || strcmp(name_of(b, t), name))
			continue;
		if (found && global && !g)
			continue;
		p = render(b, id, "", true, 0);
		if (found && !(g && !global)) {
			if (!p || !proto || strcmp(p, proto))
				*ambiguous = true;
			free(p);
			continue;
		}
		free(proto);
		proto = p;
		found = id;
		global = g;
		*ambiguous = false;
	}
	free(proto);
	return *ambiguous ? 0 : found;
}

static void bad_usage(void)
{
	fprintf(stderr, "usage: btfdecls [-f BTF]... NAME...\n"
		"       btfdecls [-f BTF]... -q QUERY\n");
	exit(2);
}

/*
 * Whether a struct @name of @b has a member @member. A struct the BTF
 * lacks has none: vmlinux's BTF holds every type of the kernel's code,
 * those private to one file (mm/mremap.c's) too.
 */
static bool has_member(const struct btf *b, const char *name,
		       const char *member)
{
	uint32_t id;
	unsigned int i, vlen;

	for (id = 1; id <= b->n; id++) {
		const unsigned char *t = b->type[id];

		if (kind_of(t) != BTF_KIND_STRUCT || strcmp(name_of(b, t), name))
			continue;
		vlen = le32(t + 4) & 0xffff;
		for (i = 0; i < vlen; i++) {
			const unsigned char *m = t + 12 + 12 * i;

			if (le32(m) < b->strs_len &&
			    !strcmp(b->strs + le32(m), member))
				return true;
		}
	}
	return false;
}

/*
 * The answer to one probe question (see the top of this file), printed;
 * 0, or 2 on a question it does not know.
 */
static int query(const struct btf *b, const char *src, const char *why,
		 const char *q)
{
	char kind[16], name[128], arg[128], end;
	const unsigned char *t;
	bool ambiguous, yes;
	uint32_t id;

	if (sscanf(q, "%15s %127s %127s %c", kind, name, arg, &end) != 3 ||
	    (strcmp(kind, "member") && strcmp(kind, "args"))) {
		fprintf(stderr, "btfdecls: not a question -q knows: %s\n", q);
		return 2;
	}
	if (!src) {
		printf("none %s\n", *why ? why : "no BTF given");
		return 0;
	}
	if (!strcmp(kind, "member")) {
		yes = has_member(b, name, arg);
	} else {
		id = find_func(b, name, &ambiguous);
		t = type_of(b, id ? le32(b->type[id] + 8) : 0);
		if (!t || kind_of(t) != BTF_KIND_FUNC_PROTO) {
			printf("none %s: %s()%s\n", src, name, ambiguous ?
			       " has two prototypes" : " is not in it");
			return 0;
		}
		yes = (le32(t + 4) & 0xffff) == strtoul(arg, NULL, 10);
	}
	printf("%s %s\n", yes ? "yes" : "no", src);
	return fflush(stdout) || ferror(stdout);
}

int main(int argc, char **argv)
{
	const char *src = NULL, *q = NULL;
	char *why = fmt("%s", "");
	struct btf b = { 0 };
	unsigned char *data = NULL;
	char *absent = fmt("%s", "");
	char **decl, **text;
	int c, i, nfound = 0;

	while ((c = getopt(argc, argv, "f:q:")) != -1) {
		size_t len;
		char *w;

		if (c == 'q') {
			q = optarg;
			continue;
		}
		if (c != 'f')
			bad_usage();
		if (src)
			continue;
		data = read_btf(optarg, &len);
		if (data && btf_parse(&b, data, len)) {
			src = optarg;
			continue;
		}
		w = fmt("%s%s%s: %s", why, *why ? "; " : "", optarg, err);
		free(why);
		why = w;
		free(data);
		free(b.type);
		data = NULL;
	}
	if (q) {
		if (optind < argc)
			bad_usage();
		return query(&b, src, why, q);
	}
	if (optind >= argc)
		bad_usage();

	decl = xalloc(argc * sizeof(*decl));
	text = xalloc(argc * sizeof(*text));
	for (i = optind; src && i < argc; i++) {
		bool ambiguous;
		uint32_t id = find_func(&b, argv[i], &ambiguous);
		char *t = fmt("fr_btf_%s_t", argv[i]), *w;

		if (id) {
			decl[i] = render(&b, id, t, true, 0);
			text[i] = render(&b, id, argv[i], false, 0);
		}
		free(t);
		if (decl[i] && text[i]) {
			nfound++;
			continue;
		}
		w = fmt("%s%s%s%s", absent, *absent ? ", " : "", argv[i],
			ambiguous ? " (two prototypes)" : id ?
			" (a type it cannot spell)" : "");
		free(absent);
		absent = w;
	}

	printf("/* Generated by btfdecls for decls.c: do not edit. */\n");
	printf("/* BTF: %s */\n", src ? src : "none");
	for (i = 0; i < (int)ntags; i++)
		printf("%s;\n", tags[i]);
	for (i = optind; i < argc; i++) {
		printf("#define FR_DECL_CHECK_fr_sc_%s(type) \\\n", argv[i]);
		printf("\textern typeof(type) %s", argv[i]);
		if (!decl[i] || !text[i]) {
			printf("\n");
			continue;
		}
		printf("; \\\n\tstatic_assert(__builtin_types_compatible_p(typeof(type), fr_btf_%s_t), \\\n",
		       argv[i]);
		printf("\t\t\"fastremap: %s() differs from the kernel, whose BTF declares %s, not the type symlist.h gives it\")\n",
		       argv[i], text[i]);
		printf("typedef %s;\n", decl[i]);
	}

	if (src)
		fprintf(stderr, "fastremap: kernel function prototypes: checked against the BTF of %s (%d of symlist.h's %d functions%s%s) and the kernel headers' declarations\n",
			src, nfound, argc - optind,
			*absent ? "; not in it: " : "", absent);
	else
		fprintf(stderr, "fastremap: kernel function prototypes: no BTF for this kernel (%s): checked against the kernel headers' declarations only, which miss those only mm/ declares\n",
			*why ? why : "none given");
	return fflush(stdout) || ferror(stdout);
}
