// SPDX-License-Identifier: MIT
/*
 * liburoce_view.so: the device view, an LD_PRELOAD interposer.
 *
 * RDMA clients (UCX, Open MPI, rdma-core's tests) look for a device where
 * Linux keeps one: /dev/infiniband/<dev_name> must be an rw character
 * device, /sys/class/infiniband/<name> holds its ports, GID types and
 * netdevs. uroce has no kernel module, so uroce-run writes such a tree
 * (tools/uroce-view.c) and preloads this library, which sends the libc
 * path calls for those prefixes into the tree named by UROCE_VIEW_DIR.
 * Every other path, and every call in a process without UROCE_VIEW_DIR,
 * goes to libc untouched. Only absolute paths are mapped: a relative one
 * under a directory opened through the view already lies in the tree.
 *
 * The interposed symbols are the ones glibc 2.36 exports for these calls,
 * including the fortified (__open_2, __realpath_chk) and the pre-2.33
 * stat (__xstat) variants that older binaries import.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VIEW_EXPORT __attribute__((visibility("default")))

static const char *const view_prefixes[] = {
	"/dev/infiniband",
	"/sys/class/infiniband",
	"/sys/class/infiniband_verbs",
};

static char view_root[PATH_MAX];
static size_t view_root_len;

__attribute__((constructor)) static void view_init(void)
{
	const char *r = getenv("UROCE_VIEW_DIR");
	size_t n;

	if (!r || r[0] != '/')
		return;
	n = strlen(r);
	while (n > 1 && r[n - 1] == '/')
		n--;
	if (n >= sizeof(view_root) / 2)
		return;
	memcpy(view_root, r, n);
	view_root[n] = '\0';
	view_root_len = n;
}

/*
 * @path mapped into the tree (in @buf), or @path itself. A prefix matches
 * as a whole component: /sys/class/infiniband_verbs is not a path under
 * /sys/class/infiniband, and /dev/infinibandx is nobody's.
 */
static const char *view_map(const char *path, char *buf)
{
	if (!view_root_len || !path || path[0] != '/')
		return path;
	for (size_t i = 0; i < sizeof(view_prefixes) / sizeof(view_prefixes[0]); i++) {
		size_t n = strlen(view_prefixes[i]);

		if (strncmp(path, view_prefixes[i], n) ||
		    (path[n] != '\0' && path[n] != '/'))
			continue;
		if (view_root_len + strlen(path) + 1 > PATH_MAX)
			return path; /* too long for the tree: let libc say so */
		memcpy(buf, view_root, view_root_len);
		strcpy(buf + view_root_len, path);
		return buf;
	}
	return path;
}

/* A resolved path inside the tree is reported as the path it stands for. */
static void view_unmap(char *resolved)
{
	if (resolved && view_root_len &&
	    !strncmp(resolved, view_root, view_root_len) &&
	    resolved[view_root_len] == '/')
		memmove(resolved, resolved + view_root_len,
			strlen(resolved + view_root_len) + 1);
}

/* The next definition of @name (libc's), looked up once. */
#define NEXT(ret, name, params)                                               \
	static ret(*next_##name) params;                                      \
	if (!next_##name)                                                     \
		next_##name = (ret(*) params)dlsym(RTLD_NEXT, #name);         \
	if (!next_##name) {                                                   \
		errno = ENOSYS;                                               \
		return (ret)-1;                                               \
	}

#define NEXT_PTR(ret, name, params)                                           \
	static ret(*next_##name) params;                                      \
	if (!next_##name)                                                     \
		next_##name = (ret(*) params)dlsym(RTLD_NEXT, #name);         \
	if (!next_##name) {                                                   \
		errno = ENOSYS;                                               \
		return NULL;                                                  \
	}

/* open's mode argument exists only with O_CREAT or O_TMPFILE. */
static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ?
		       (mode_t)va_arg(ap, int) : 0;
}

/* ---- open ---------------------------------------------------------------- */

#define VIEW_OPEN(name)                                                       \
	VIEW_EXPORT int name(const char *path, int flags, ...);               \
	VIEW_EXPORT int name(const char *path, int flags, ...)                \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		va_list ap;                                                   \
		mode_t mode;                                                  \
		NEXT(int, name, (const char *, int, ...));                    \
		va_start(ap, flags);                                          \
		mode = open_mode(flags, ap);                                  \
		va_end(ap);                                                   \
		return next_##name(view_map(path, buf), flags, mode);         \
	}
VIEW_OPEN(open)
VIEW_OPEN(open64)

#define VIEW_OPENAT(name)                                                     \
	VIEW_EXPORT int name(int dirfd, const char *path, int flags, ...);    \
	VIEW_EXPORT int name(int dirfd, const char *path, int flags, ...)     \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		va_list ap;                                                   \
		mode_t mode;                                                  \
		NEXT(int, name, (int, const char *, int, ...));               \
		va_start(ap, flags);                                          \
		mode = open_mode(flags, ap);                                  \
		va_end(ap);                                                   \
		return next_##name(dirfd, view_map(path, buf), flags, mode);  \
	}
VIEW_OPENAT(openat)
VIEW_OPENAT(openat64)

#define VIEW_OPEN_2(name)                                                     \
	VIEW_EXPORT int name(const char *path, int flags);                    \
	VIEW_EXPORT int name(const char *path, int flags)                     \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (const char *, int));                         \
		return next_##name(view_map(path, buf), flags);               \
	}
VIEW_OPEN_2(__open_2)
VIEW_OPEN_2(__open64_2)

#define VIEW_OPENAT_2(name)                                                   \
	VIEW_EXPORT int name(int dirfd, const char *path, int flags);         \
	VIEW_EXPORT int name(int dirfd, const char *path, int flags)          \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (int, const char *, int));                    \
		return next_##name(dirfd, view_map(path, buf), flags);        \
	}
VIEW_OPENAT_2(__openat_2)
VIEW_OPENAT_2(__openat64_2)

#define VIEW_FOPEN(name)                                                      \
	VIEW_EXPORT FILE *name(const char *path, const char *mode);           \
	VIEW_EXPORT FILE *name(const char *path, const char *mode)            \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT_PTR(FILE *, name, (const char *, const char *));         \
		return next_##name(view_map(path, buf), mode);                \
	}
VIEW_FOPEN(fopen)
VIEW_FOPEN(fopen64)

/* ---- stat ---------------------------------------------------------------- */

#define VIEW_STAT(name, st_t)                                                 \
	VIEW_EXPORT int name(const char *path, st_t *st);                     \
	VIEW_EXPORT int name(const char *path, st_t *st)                      \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (const char *, st_t *));                      \
		return next_##name(view_map(path, buf), st);                  \
	}
VIEW_STAT(stat, struct stat)
VIEW_STAT(stat64, struct stat64)
VIEW_STAT(lstat, struct stat)
VIEW_STAT(lstat64, struct stat64)

#define VIEW_XSTAT(name, st_t)                                                \
	VIEW_EXPORT int name(int ver, const char *path, st_t *st);            \
	VIEW_EXPORT int name(int ver, const char *path, st_t *st)             \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (int, const char *, st_t *));                 \
		return next_##name(ver, view_map(path, buf), st);             \
	}
VIEW_XSTAT(__xstat, struct stat)
VIEW_XSTAT(__xstat64, struct stat64)
VIEW_XSTAT(__lxstat, struct stat)
VIEW_XSTAT(__lxstat64, struct stat64)

#define VIEW_FSTATAT(name, st_t)                                              \
	VIEW_EXPORT int name(int dirfd, const char *path, st_t *st, int fl);  \
	VIEW_EXPORT int name(int dirfd, const char *path, st_t *st, int fl)   \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (int, const char *, st_t *, int));            \
		return next_##name(dirfd, view_map(path, buf), st, fl);       \
	}
VIEW_FSTATAT(fstatat, struct stat)
VIEW_FSTATAT(fstatat64, struct stat64)

#define VIEW_FXSTATAT(name, st_t)                                             \
	VIEW_EXPORT int name(int ver, int dirfd, const char *path, st_t *st,  \
			     int fl);                                         \
	VIEW_EXPORT int name(int ver, int dirfd, const char *path, st_t *st,  \
			     int fl)                                          \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (int, int, const char *, st_t *, int));       \
		return next_##name(ver, dirfd, view_map(path, buf), st, fl);  \
	}
VIEW_FXSTATAT(__fxstatat, struct stat)
VIEW_FXSTATAT(__fxstatat64, struct stat64)

VIEW_EXPORT int statx(int dirfd, const char *path, int flags,
		      unsigned int mask, struct statx *stx)
{
	char buf[PATH_MAX];
	NEXT(int, statx, (int, const char *, int, unsigned int, struct statx *));
	return next_statx(dirfd, view_map(path, buf), flags, mask, stx);
}

/* ---- access -------------------------------------------------------------- */

#define VIEW_ACCESS(name)                                                     \
	VIEW_EXPORT int name(const char *path, int mode);                     \
	VIEW_EXPORT int name(const char *path, int mode)                      \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(int, name, (const char *, int));                         \
		return next_##name(view_map(path, buf), mode);                \
	}
VIEW_ACCESS(access)
VIEW_ACCESS(euidaccess)
VIEW_ACCESS(eaccess)

VIEW_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	char buf[PATH_MAX];
	NEXT(int, faccessat, (int, const char *, int, int));
	return next_faccessat(dirfd, view_map(path, buf), mode, flags);
}

/* ---- directories and links ----------------------------------------------- */

VIEW_EXPORT DIR *opendir(const char *path)
{
	char buf[PATH_MAX];
	NEXT_PTR(DIR *, opendir, (const char *));
	return next_opendir(view_map(path, buf));
}

VIEW_EXPORT ssize_t readlink(const char *path, char *out, size_t len)
{
	char buf[PATH_MAX];
	NEXT(ssize_t, readlink, (const char *, char *, size_t));
	return next_readlink(view_map(path, buf), out, len);
}

VIEW_EXPORT ssize_t __readlink_chk(const char *path, char *out, size_t len,
				   size_t outlen);
VIEW_EXPORT ssize_t __readlink_chk(const char *path, char *out, size_t len,
				   size_t outlen)
{
	char buf[PATH_MAX];
	NEXT(ssize_t, __readlink_chk, (const char *, char *, size_t, size_t));
	return next___readlink_chk(view_map(path, buf), out, len, outlen);
}

VIEW_EXPORT ssize_t readlinkat(int dirfd, const char *path, char *out,
			       size_t len)
{
	char buf[PATH_MAX];
	NEXT(ssize_t, readlinkat, (int, const char *, char *, size_t));
	return next_readlinkat(dirfd, view_map(path, buf), out, len);
}

VIEW_EXPORT char *realpath(const char *path, char *resolved)
{
	char buf[PATH_MAX];
	const char *p;
	char *r;
	NEXT_PTR(char *, realpath, (const char *, char *));
	p = view_map(path, buf);
	r = next_realpath(p, resolved);
	if (p != path)
		view_unmap(r);
	return r;
}

VIEW_EXPORT char *__realpath_chk(const char *path, char *resolved,
				 size_t resolvedlen);
VIEW_EXPORT char *__realpath_chk(const char *path, char *resolved,
				 size_t resolvedlen)
{
	char buf[PATH_MAX];
	const char *p;
	char *r;
	NEXT_PTR(char *, __realpath_chk, (const char *, char *, size_t));
	p = view_map(path, buf);
	r = next___realpath_chk(p, resolved, resolvedlen);
	if (p != path)
		view_unmap(r);
	return r;
}

VIEW_EXPORT char *canonicalize_file_name(const char *path)
{
	char buf[PATH_MAX];
	const char *p;
	char *r;
	NEXT_PTR(char *, canonicalize_file_name, (const char *));
	p = view_map(path, buf);
	r = next_canonicalize_file_name(p);
	if (p != path)
		view_unmap(r);
	return r;
}

/* ls -l asks for ACLs and security labels of what it lists. */
#define VIEW_GETXATTR(name)                                                   \
	VIEW_EXPORT ssize_t name(const char *path, const char *key, void *v,  \
				 size_t len);                                 \
	VIEW_EXPORT ssize_t name(const char *path, const char *key, void *v,  \
				 size_t len)                                  \
	{                                                                     \
		char buf[PATH_MAX];                                           \
		NEXT(ssize_t, name, (const char *, const char *, void *,      \
				     size_t));                                \
		return next_##name(view_map(path, buf), key, v, len);         \
	}
VIEW_GETXATTR(getxattr)
VIEW_GETXATTR(lgetxattr)
