/* usbyte-doctor FILE...  |  usbyte-doctor --python
 *
 * Says, for each ELF file (a framework's shared library or a program), whether usbyte can reach
 * its NCCL and CUDA runtime calls through LD_PRELOAD, reading the file with libelf and never
 * running it:
 *   - NCCL: ncclAllReduce undefined in .dynsym (imported, interposable), or defined inside the file
 *     (static NCCL: its calls bind inside, unless the file exports it and calls it through its own
 *     PLT, which LD_PRELOAD does intercept);
 *   - CUDA runtime: cudaEventRecord imported under which version node (usbyte's wrappers bind only
 *     to the nodes its libusbyte.so defines, read from that file), or defined inside (a static
 *     runtime: completion cannot be redirected, so only observe mode works);
 *   - the binding: -Bsymbolic (DT_SYMBOLIC / DF_SYMBOLIC), and per entry point whether the file's
 *     own calls of a definition it exports go through a dynamic relocation;
 *   - the NCCL version of a libnccl.so.2 (its "NCCL version" string).
 * Exit status: 0 when every file is interposable for schedule mode, 1 when some are not (only
 * observable, or not at all), 2 for unusable input (not ELF, truncated, unreadable). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OK = 0, OBSERVE = 1, UNUSABLE = 2 };

/* What one ELF file says about one entry point. */
typedef struct sym_info {
    bool imported;      /* undefined in .dynsym */
    bool exported;      /* defined in .dynsym with default visibility */
    bool defined;       /* defined in .dynsym or .symtab */
    bool relocated;     /* a dynamic relocation refers to its .dynsym entry (calls go through the PLT/GOT) */
    char version[128];  /* version node of the import or definition, "" when unversioned */
    unsigned long long addr;
} sym_info;

typedef struct elf_facts {
    const char *path;
    GElf_Half type;  /* ET_EXEC, ET_DYN, ... */
    char soname[256];
    char needed[32][128];
    int n_needed;
    bool symbolic;      /* -Bsymbolic: DT_SYMBOLIC or DF_SYMBOLIC */
    bool pie;           /* a position-independent program (ET_DYN too, but its own definitions bind first) */
    bool has_dynsym;
    sym_info nccl, cuda;
    char nccl_version[64];  /* from "NCCL version X" in the file's data */
    bool cudart_names;      /* the CUDA runtime's table of error names is in the file's data */
    bool usbyte_names;      /* usbyte's settings' names are in the file's data */
} elf_facts;

static const char *NCCL_SYM = "ncclAllReduce", *CUDA_SYM = "cudaEventRecord";

/* Version node names defined by usbyte's library for the CUDA runtime ("libcudart.so.13"...). */
static char usbyte_nodes[8][64];
static int n_usbyte_nodes = -1; /* -1: no libusbyte.so found */
static char usbyte_lib[PATH_MAX];

static bool needs(const elf_facts *e, const char *prefix)
{
    for (int i = 0; i < e->n_needed; i++)
        if (!strncmp(e->needed[i], prefix, strlen(prefix)))
            return true;
    return false;
}

/* Version names by index: from .gnu.version_d (definitions) and .gnu.version_r (needs). */
typedef struct vnames {
    char name[64][128];
    int max;
} vnames;

static void read_verdef(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, vnames *v)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t off = 0;
    for (int i = 0; d && i < (int)sh->sh_info; i++) {
        GElf_Verdef vd;
        GElf_Verdaux va;
        if (!gelf_getverdef(d, (int)off, &vd) || !gelf_getverdaux(d, (int)(off + vd.vd_aux), &va))
            break;
        const char *n = elf_strptr(elf, sh->sh_link, va.vda_name);
        if (n && vd.vd_ndx < 64)
            snprintf(v->name[vd.vd_ndx], sizeof v->name[0], "%s", n);
        if (!vd.vd_next)
            break;
        off += vd.vd_next;
    }
}

static void read_verneed(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, vnames *v)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    size_t off = 0;
    for (int i = 0; d && i < (int)sh->sh_info; i++) {
        GElf_Verneed vn;
        if (!gelf_getverneed(d, (int)off, &vn))
            break;
        size_t aoff = off + vn.vn_aux;
        for (int k = 0; k < vn.vn_cnt; k++) {
            GElf_Vernaux va;
            if (!gelf_getvernaux(d, (int)aoff, &va))
                break;
            const char *n = elf_strptr(elf, sh->sh_link, va.vna_name);
            if (n && (va.vna_other & 0x7fff) < 64)
                snprintf(v->name[va.vna_other & 0x7fff], sizeof v->name[0], "%s", n);
            if (!va.vna_next)
                break;
            aoff += va.vna_next;
        }
        if (!vn.vn_next)
            break;
        off += vn.vn_next;
    }
}

/* Finds, in the file's loaded read-only data, "NCCL version <version>" and the CUDA runtime's
 * error names (cudaGetErrorName's table, which only a runtime linked in carries): what is left of
 * a static NCCL or CUDA runtime once the symbols are stripped. */
static void find_strings(Elf_Scn *scn, GElf_Shdr *sh, elf_facts *e)
{
    if (sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_ALLOC) || (sh->sh_flags & SHF_EXECINSTR))
        return;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf)
        return;
    static const char key[] = "NCCL version ", rt[] = "cudaErrorInitializationError";
    const char *p = d->d_buf, *end = p + d->d_size;
    if (memmem(p, d->d_size, rt, sizeof rt))
        e->cudart_names = true;
    static const char ub[] = "USBYTE_STAGING_MB";
    if (memmem(p, d->d_size, ub, sizeof ub))
        e->usbyte_names = true;
    while (!e->nccl_version[0] && p < end && (p = memmem(p, (size_t)(end - p), key, sizeof key - 1)) != NULL) {
        const char *v = p + sizeof key - 1;
        size_t n = 0;
        while (v + n < end && n < sizeof e->nccl_version - 1 &&
               (strchr("0123456789.+cuda", v[n]) != NULL && v[n] != 0))
            n++;
        if (n && v[0] >= '0' && v[0] <= '9') { /* a format string ("NCCL version %s") is not a version */
            memcpy(e->nccl_version, v, n);
            e->nccl_version[n] = 0;
            return;
        }
        p = v;
    }
}

/* The dynamic section: needed libraries, soname, symbolic binding, PIE. */
static void read_dynamic(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, elf_facts *e)
{
    Elf_Data *d = elf_getdata(scn, NULL);
    for (size_t i = 0; d && i < sh->sh_size / (sh->sh_entsize ? sh->sh_entsize : 1); i++) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(d, (int)i, &dyn))
            break;
        const char *s = NULL;
        if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME)
            s = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
        if (dyn.d_tag == DT_NEEDED && s && e->n_needed < 32)
            snprintf(e->needed[e->n_needed++], sizeof e->needed[0], "%s", s);
        if (dyn.d_tag == DT_SONAME && s)
            snprintf(e->soname, sizeof e->soname, "%s", s);
        if (dyn.d_tag == DT_SYMBOLIC || (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_SYMBOLIC)))
            e->symbolic = true;
        if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
            e->pie = true;
    }
}

/* The facts of NCCL_SYM or CUDA_SYM, by name; NULL for any other symbol. */
static sym_info *watched(elf_facts *e, const char *name)
{
    return !name ? NULL : !strcmp(name, NCCL_SYM) ? &e->nccl : !strcmp(name, CUDA_SYM) ? &e->cuda : NULL;
}

/* .dynsym: the two entries imported or exported, their version nodes, and their indexes (for the
 * relocations). */
static void read_dynsym(Elf *elf, Elf_Scn *dynsym, const GElf_Shdr *sh, Elf_Scn *versym, const vnames *vn,
                        elf_facts *e, size_t *nccl_ix, size_t *cuda_ix)
{
    e->has_dynsym = true;
    Elf_Data *d = elf_getdata(dynsym, NULL), *vd = versym ? elf_getdata(versym, NULL) : NULL;
    size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 1; d && i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s))
            break;
        sym_info *si = watched(e, elf_strptr(elf, sh->sh_link, s.st_name));
        if (!si)
            continue;
        *(si == &e->nccl ? nccl_ix : cuda_ix) = i;
        GElf_Versym ver = 0;
        if (vd)
            gelf_getversym(vd, (int)i, &ver);
        if ((ver & 0x7fff) > 1 && (ver & 0x7fff) < 64)
            snprintf(si->version, sizeof si->version, "%s", vn->name[ver & 0x7fff]);
        if (s.st_shndx == SHN_UNDEF) {
            si->imported = true;
        } else {
            si->defined = true;
            si->addr = s.st_value;
            si->exported = GELF_ST_VISIBILITY(s.st_other) == STV_DEFAULT;
        }
    }
}

/* .symtab (when not stripped): definitions the dynamic table does not export. */
static void read_symtab(Elf *elf, Elf_Scn *symtab, const GElf_Shdr *sh, elf_facts *e)
{
    Elf_Data *d = elf_getdata(symtab, NULL);
    size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    for (size_t i = 1; d && i < n; i++) {
        GElf_Sym s;
        if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
            continue;
        sym_info *si = watched(e, elf_strptr(elf, sh->sh_link, s.st_name));
        if (si && !si->defined) {
            si->defined = true;
            si->addr = s.st_value;
        }
    }
}

/* Dynamic relocations against the two entries (indexes into .dynsym, section dynsym_index):
 * calls that go through the PLT or the GOT. */
static void read_relocations(Elf *elf, size_t dynsym_index, size_t nccl_ix, size_t cuda_ix, elf_facts *e)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_RELA && sh.sh_type != SHT_REL) || sh.sh_link != dynsym_index)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
        for (size_t i = 0; d && i < n; i++) {
            size_t sym;
            if (sh.sh_type == SHT_RELA) {
                GElf_Rela r;
                if (!gelf_getrela(d, (int)i, &r))
                    break;
                sym = GELF_R_SYM(r.r_info);
            } else {
                GElf_Rel r;
                if (!gelf_getrel(d, (int)i, &r))
                    break;
                sym = GELF_R_SYM(r.r_info);
            }
            if (sym && sym == nccl_ix)
                e->nccl.relocated = true;
            if (sym && sym == cuda_ix)
                e->cuda.relocated = true;
        }
    }
}

/* Reads what the checks need.  0, or -1 with a one-line reason in why. */
static int inspect(const char *path, elf_facts *e, char *why, size_t len)
{
    memset(e, 0, sizeof *e);
    e->path = path;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(why, len, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    fstat(fd, &st);
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "not a regular file");
        close(fd);
        return -1;
    }
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int rc = -1;
    GElf_Ehdr eh;
    size_t nsec = 0;
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        snprintf(why, len, elf && elf_kind(elf) == ELF_K_AR ? "a static archive (.a), not a linked file: check the program or "
                                                             "library it is linked into"
                                                           : "not an ELF file");
        goto out;
    }
    if (!gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &nsec) != 0) {
        snprintf(why, len, "truncated or corrupt ELF: %s", elf_errmsg(-1));
        goto out;
    }
    /* Offsets and sizes compared without their sum, which a corrupt header can wrap past 2^64. */
    unsigned long long size = (unsigned long long)st.st_size, table = (unsigned long long)nsec * eh.e_shentsize;
    if (eh.e_shoff > size) {
        /* An offset no file reaches is corruption; a plausible one, a file cut short. */
        if (eh.e_shoff < 1ull << 48)
            snprintf(why, len, "truncated ELF: the section headers start at byte %llu, the file has %llu",
                     (unsigned long long)eh.e_shoff, size);
        else
            snprintf(why, len, "corrupt ELF: the section headers start at offset 0x%llx, beyond the file's %llu bytes",
                     (unsigned long long)eh.e_shoff, size);
        goto out;
    }
    if (table > size - eh.e_shoff) {
        snprintf(why, len, "truncated ELF: the section headers end at byte %llu, the file has %llu",
                 (unsigned long long)eh.e_shoff + table, size);
        goto out;
    }
    e->type = eh.e_type;
    vnames *vn = calloc(1, sizeof *vn);
    Elf_Scn *scn = NULL, *dynsym = NULL, *symtab = NULL, *versym = NULL;
    GElf_Shdr dynsym_sh = {0}, symtab_sh = {0};
    size_t dynsym_index = 0;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) {
            snprintf(why, len, "corrupt section header: %s", elf_errmsg(-1));
            free(vn);
            goto out;
        }
        if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)) {
            const char *name = elf_strptr(elf, eh.e_shstrndx, sh.sh_name);
            if (sh.sh_offset > size)
                snprintf(why, len, "corrupt ELF: section %s starts at offset 0x%llx, beyond the file's %llu bytes",
                         name ? name : "?", (unsigned long long)sh.sh_offset, size);
            else
                snprintf(why, len, "truncated ELF: section %s ends at byte %llu, the file has %llu", name ? name : "?",
                         (unsigned long long)(sh.sh_offset + sh.sh_size), size);
            free(vn);
            goto out;
        }
        switch (sh.sh_type) {
        case SHT_DYNSYM: dynsym = scn; dynsym_sh = sh; dynsym_index = elf_ndxscn(scn); break;
        case SHT_SYMTAB: symtab = scn; symtab_sh = sh; break;
        case SHT_GNU_versym: versym = scn; break;
        case SHT_GNU_verdef: read_verdef(elf, scn, &sh, vn); break;
        case SHT_GNU_verneed: read_verneed(elf, scn, &sh, vn); break;
        case SHT_DYNAMIC: read_dynamic(elf, scn, &sh, e); break;
        default: break;
        }
        find_strings(scn, &sh, e);
    }
    if (dynsym) {
        size_t nccl_ix = 0, cuda_ix = 0;
        read_dynsym(elf, dynsym, &dynsym_sh, versym, vn, e, &nccl_ix, &cuda_ix);
        read_relocations(elf, dynsym_index, nccl_ix, cuda_ix, e);
    }
    if (symtab)
        read_symtab(elf, symtab, &symtab_sh, e);
    free(vn);
    rc = 0;
out:
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

static bool usbyte_has_node(const char *node)
{
    for (int i = 0; i < n_usbyte_nodes; i++)
        if (!strcmp(usbyte_nodes[i], node))
            return true;
    return false;
}

static void usbyte_node_list(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n_usbyte_nodes && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", usbyte_nodes[i]);
}

/* What a file is for usbyte: each verdict line starts with one of these words, and the summary
 * counts exactly these. */
typedef enum { V_INTERPOSABLE, V_OBSERVE, V_NOT, V_NOTHING, V_UNUSABLE, V_COUNT } verdict;
static const char *const verdict_words[V_COUNT] = {"interposable for schedule mode", "observe only", "not interposable",
                                                   "nothing for usbyte here", "unusable input"};

/* One file's facts for the job's verdict (--python). */
typedef struct finding {
    char path[PATH_MAX];
    verdict v;
    bool calls_nccl;        /* the framework's NCCL calls are in this file (imported or linked in) */
    bool nccl_static;       /* ... and bound inside it */
    bool cuda_problem;      /* its cudaEventRecord calls cannot be redirected */
    char cuda_version[128]; /* the version node of its cudaEventRecord import */
} finding;

static void say_verdict(verdict v, const char *detail)
{
    printf("  verdict: %s%s%s\n", verdict_words[v], detail && *detail ? ": " : "", detail ? detail : "");
}

/* Is this usbyte's own library?  By its SONAME or name, by being the libusbyte.so found beside
 * this program, or by what only it holds: both entry points defined and the USBYTE_ settings'
 * names in its data. */
static bool is_usbyte(const char *path, const elf_facts *e)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char real[PATH_MAX];
    return !strncmp(e->soname, "libusbyte.so", 12) || !strncmp(base, "libusbyte.so", 12) ||
           (usbyte_lib[0] && realpath(path, real) && !strcmp(real, usbyte_lib)) ||
           (e->nccl.defined && e->cuda.defined && e->usbyte_names);
}

/* Prints the lines for one file; its verdict and facts go into f. */
/* The NCCL entry point of a file: printed; the problem that keeps its calls from usbyte, or NULL. */
static const char *diagnose_nccl(const elf_facts *e, finding *f, bool is_nccl, bool shared)
{
    const sym_info *n = &e->nccl;
    const char *problem = NULL;
    if (is_nccl) {
        printf("  NCCL: this is NCCL itself (SONAME %s), version %s: usbyte interposes the calls made into it\n", e->soname,
               e->nccl_version[0] ? e->nccl_version : "unknown (no \"NCCL version\" string found)");
    } else if (n->imported) {
        f->calls_nccl = true;
        printf("  NCCL: imported (undefined %s in .dynsym%s%s%s): interposable\n", NCCL_SYM,
               needs(e, "libnccl.so") ? ", libnccl.so.2 in DT_NEEDED" : ", provided by a library loaded with it",
               n->version[0] ? ", version " : "", n->version);
    } else if (n->defined && shared && n->exported && n->relocated && !e->symbolic) {
        f->calls_nccl = true;
        printf("  NCCL: linked into the file (%s defined at 0x%llx), but exported and called through a dynamic "
               "relocation: LD_PRELOAD still intercepts it\n", NCCL_SYM, n->addr);
    } else if (n->defined || e->nccl_version[0]) {
        f->calls_nccl = f->nccl_static = true;
        problem = "its NCCL calls never reach usbyte";
        const char *how = !n->defined ? "NCCL's version string is inside, its symbols stripped"
                          : !shared   ? "a program's own definition binds its calls"
                          : e->symbolic ? "-Bsymbolic binds the file's calls to its own definition"
                          : !n->exported ? "not exported (hidden, or local by a version script)"
                                          : "exported, but called directly (-Bsymbolic-functions or protected)";
        printf("  NCCL: linked statically (%s defined in the file%s%s: %s): not interposable; fix: Horovod: build with "
               "HOROVOD_NCCL_LINK=SHARED; PyTorch: the wheel that loads libnccl.so.2 from the nvidia-nccl package\n",
               NCCL_SYM, e->nccl_version[0] ? ", NCCL " : "", e->nccl_version, how);
    } else {
        printf("  NCCL: not used (no %s)\n", NCCL_SYM);
    }
    return problem;
}

/* The CUDA runtime entry point of a file: printed; *uses when the file calls it; the problem that
 * keeps schedule mode from it, or NULL. */
static const char *diagnose_cuda(const elf_facts *e, finding *f, bool is_nccl, bool is_cudart, bool *uses)
{
    const sym_info *c = &e->cuda;
    const char *problem = NULL;
    const char *static_fix = "relink it with the shared runtime (nvcc -cudart shared, CMake's "
                             "CUDA_RUNTIME_LIBRARY Shared) or use a framework build that loads libcudart.so; until "
                             "then run with USBYTE_MODE=observe";
    if (is_cudart) {
        printf("  CUDA runtime: this is the CUDA runtime itself (SONAME %s): usbyte interposes the calls made into it\n",
               e->soname);
    } else if (is_nccl && (c->defined || e->cudart_names)) {
        /* NVIDIA links NCCL with its own static runtime: those are NCCL's calls, not the framework's. */
        printf("  CUDA runtime: NCCL's own, linked statically into it (as NVIDIA builds NCCL): its internal calls "
               "are not the framework's and do not matter to usbyte\n");
    } else if (c->imported) {
        *uses = true;
        snprintf(f->cuda_version, sizeof f->cuda_version, "%s", c->version);
        char nodes[256];
        usbyte_node_list(nodes, sizeof nodes);
        if (!c->version[0]) {
            printf("  CUDA runtime: imported (%s, unversioned): usbyte's wrappers bind to it\n", CUDA_SYM);
        } else if (n_usbyte_nodes < 0) {
            printf("  CUDA runtime: imported as %s@%s (no libusbyte.so found to compare with: --lib PATH)\n", CUDA_SYM,
                   c->version);
        } else if (usbyte_has_node(c->version)) {
            printf("  CUDA runtime: imported as %s@%s: usbyte's wrappers bind to it (%s exports %s)\n", CUDA_SYM,
                   c->version, usbyte_lib, nodes);
        } else {
            problem = "its CUDA runtime calls do not reach usbyte (another version node): build usbyte against "
                           "this CUDA version";
            printf("  CUDA runtime: imported as %s@%s, but %s exports its wrappers only under %s: completion cannot be "
                   "redirected (schedule mode impossible); observe still measures the NCCL calls\n",
                   CUDA_SYM, c->version, usbyte_lib, nodes[0] ? nodes : "no libcudart node");
        }
    } else if ((c->defined || e->cudart_names) && !f->calls_nccl) {
        /* cuBLAS, cuDNN, cuFFT...: NVIDIA links them with their own static runtime.  Their calls run
         * their kernels; the completion usbyte redirects is the NCCL caller's. */
        printf("  CUDA runtime: linked statically (as NVIDIA builds cuBLAS, cuDNN and their kin), but the file makes no "
               "NCCL call: its own runtime calls do not matter to usbyte\n");
    } else if (c->defined) {
        *uses = true;
        problem = static_fix;
        printf("  CUDA runtime: linked statically (%s defined in the file at 0x%llx): completion cannot be redirected, "
               "so schedule mode is impossible; observe can still measure the NCCL calls\n", CUDA_SYM, c->addr);
    } else if (e->cudart_names) {
        *uses = true;
        problem = static_fix;
        printf("  CUDA runtime: linked statically (the runtime's error names are in the file, its symbols stripped): "
               "completion cannot be redirected, so schedule mode is impossible; observe can still measure the NCCL "
               "calls\n");
    } else {
        printf("  CUDA runtime: not used (no %s)\n", CUDA_SYM);
    }
    f->cuda_problem = problem != NULL;
    return problem;
}

/* Binding, where it decides something. */
static void diagnose_binding(const elf_facts *e, bool is_nccl, bool is_cudart)
{
    /* Binding, where it decides something: a file whose own calls of an entry point it defines
     * matter (NCCL's and the runtime's internal calls do not). */
    bool own_defs = (e->nccl.defined && !is_nccl) || (e->cuda.defined && !is_cudart && !is_nccl);
    if (e->symbolic && own_defs)
        printf("  binding: linked with -Bsymbolic (DT_SYMBOLIC/DF_SYMBOLIC): the file's calls of its own "
               "definitions bind inside it, and LD_PRELOAD cannot intercept them\n");
    else if (e->symbolic)
        printf("  binding: linked with -Bsymbolic; the calls it binds inside are its own internal ones, not the "
               "framework's, so it does not matter here\n");
}

static verdict diagnose(const char *path, finding *f)
{
    elf_facts e;
    char why[512];
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    printf("%s:\n", path);
    if (inspect(path, &e, why, sizeof why) != 0) {
        say_verdict(f->v = V_UNUSABLE, why);
        return f->v;
    }
    bool is_nccl = !strncmp(e.soname, "libnccl.so", 10), is_cudart = !strncmp(e.soname, "libcudart.so", 12);
    bool shared = e.type == ET_DYN && !e.pie;
    if (is_usbyte(path, &e)) {
        printf("  this is usbyte's own library%s%s%s: it defines the wrappers; check the framework's libraries or the "
               "program\n", e.soname[0] ? " (SONAME " : "", e.soname, e.soname[0] ? ")" : "");
        say_verdict(f->v = V_NOTHING, "usbyte's own library");
        return f->v;
    }
    const char *nccl_problem = diagnose_nccl(&e, f, is_nccl, shared);
    bool uses_cuda = false;
    const char *cuda_problem = diagnose_cuda(&e, f, is_nccl, is_cudart, &uses_cuda);
    diagnose_binding(&e, is_nccl, is_cudart);

    if (nccl_problem)
        say_verdict(f->v = V_NOT, nccl_problem);
    else if (cuda_problem)
        say_verdict(f->v = V_OBSERVE, cuda_problem);
    else if (f->calls_nccl || uses_cuda)
        say_verdict(f->v = V_INTERPOSABLE, NULL);
    else
        say_verdict(f->v = V_NOTHING, is_nccl     ? "NCCL itself: usbyte interposes the framework's calls into it"
                                      : is_cudart ? "the CUDA runtime itself: usbyte interposes the calls into it"
                                      : e.cuda.defined || e.cudart_names
                                          ? "no NCCL call (a library with its own CUDA runtime needs nothing from usbyte)"
                                          : "no NCCL or CUDA runtime entry point");
    return f->v;
}

/* --python: one verdict for the job, from the files that make its NCCL calls. */
static void job_verdict(const finding *fs, int n)
{
    const finding *stat = NULL, *cuda = NULL, *caller = NULL;
    int callers = 0;
    for (int i = 0; i < n; i++) {
        if (!fs[i].calls_nccl)
            continue;
        callers++;
        caller = caller ? caller : &fs[i];
        if (fs[i].nccl_static && !stat)
            stat = &fs[i];
        if (fs[i].cuda_problem && !cuda)
            cuda = &fs[i];
    }
    printf("usbyte-doctor: the job with this python3's torch/horovod: ");
    if (stat)
        printf("usbyte cannot reach its NCCL calls: %s links NCCL statically (PyTorch: the wheel that loads "
               "libnccl.so.2 from the nvidia-nccl package; Horovod: HOROVOD_NCCL_LINK=SHARED)\n", stat->path);
    else if (!callers)
        printf("no library calls ncclAllReduce: nothing for usbyte (is this the CUDA build?)\n");
    else if (cuda)
        printf("observe only: %s makes the NCCL calls, but its CUDA runtime calls cannot be redirected; USBYTE_MODE="
               "observe measures and plans\n", cuda->path);
    else
        printf("schedule mode will work: %s%s imports ncclAllReduce%s%s, which usbyte interposes\n", caller->path,
               callers > 1 ? " (and others)" : "", caller->cuda_version[0] ? " and cudaEventRecord@" : "",
               caller->cuda_version);
}

/* The CUDA version nodes usbyte's library defines: --lib, else next to this program (the build
 * tree) or in ../lib (an installed tree). */
static void find_usbyte(const char *given)
{
    char self[PATH_MAX], cand[2][PATH_MAX];
    int nc = 0;
    if (given) {
        snprintf(cand[nc++], PATH_MAX, "%s", given);
    } else {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0)
            return;
        self[k] = 0;
        char *slash = strrchr(self, '/');
        *slash = 0;
        snprintf(cand[nc++], PATH_MAX, "%.*s/libusbyte.so", PATH_MAX - 20, self);
        snprintf(cand[nc++], PATH_MAX, "%.*s/../lib/libusbyte.so", PATH_MAX - 24, self);
    }
    for (int i = 0; i < nc; i++) {
        int fd = open(cand[i], O_RDONLY);
        if (fd < 0)
            continue;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        Elf_Scn *scn = NULL;
        vnames *vn = calloc(1, sizeof *vn);
        bool found = false;
        while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_verdef) {
                read_verdef(elf, scn, &sh, vn);
                found = true;
            }
        }
        if (found) {
            n_usbyte_nodes = 0;
            for (int v = 0; v < 64 && n_usbyte_nodes < 8; v++)
                if (!strncmp(vn->name[v], "libcudart.so.", 13))
                    snprintf(usbyte_nodes[n_usbyte_nodes++], sizeof usbyte_nodes[0], "%s", vn->name[v]);
            if (!realpath(cand[i], usbyte_lib))
                snprintf(usbyte_lib, sizeof usbyte_lib, "%.*s", (int)sizeof usbyte_lib - 1, cand[i]);
        }
        free(vn);
        if (elf)
            elf_end(elf);
        close(fd);
        if (found)
            return;
    }
    if (given) {
        fprintf(stderr, "usbyte-doctor: --lib %s: not a libusbyte.so with version definitions\n", given);
        exit(UNUSABLE);
    }
}

/* The shared libraries of the installed torch and horovod (and the nvidia-nccl package), from
 * python3 itself, so that the interpreter the job uses is the one asked. */
static const char PY[] =
    "import glob, importlib.util, os\n"
    "for name in ('torch', 'horovod', 'nvidia.nccl'):\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(name)\n"
    "    except Exception:\n"
    "        spec = None\n"
    "    for d in (spec.submodule_search_locations or []) if spec else []:\n"
    "        for f in sorted(glob.glob(os.path.join(d, '**', '*.so*'), recursive=True)):\n"
    "            if os.path.isfile(f):\n"
    "                print(f)\n";

/* Appends the files to (*files)[n...]; returns how many, or -1 when python3 failed. */
static int python_files(char ***files, int n0)
{
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        execlp("python3", "python3", "-c", PY, (char *)NULL);
        fprintf(stderr, "usbyte-doctor: --python: cannot run python3: %s\n", strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    char line[PATH_MAX + 2];
    int n = n0;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        *files = realloc(*files, sizeof(char *) * (size_t)(n + 1));
        (*files)[n++] = strdup(line);
    }
    if (f)
        fclose(f);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n - n0 : -1;
}

int main(int argc, char **argv)
{
    const char *lib = NULL;
    int python = 0, n = 0;
    char **files = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--python")) {
            python = 1;
        } else if (!strcmp(argv[i], "--lib")) {
            if (i + 1 >= argc || !argv[i + 1][0]) {
                fprintf(stderr, "usbyte-doctor: --lib: needs the path of a libusbyte.so\n");
                return UNUSABLE;
            }
            lib = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: usbyte-doctor [--lib LIBUSBYTE.so] FILE... | usbyte-doctor --python\n"
                   "  says per ELF file whether usbyte reaches its NCCL and CUDA runtime calls, then counts the\n"
                   "  verdicts: interposable for schedule mode, observe only, not interposable, nothing for usbyte\n"
                   "  here, unusable input\n"
                   "  --python  the shared libraries of the torch and horovod that python3 imports, and one\n"
                   "            verdict for a job that uses them\n"
                   "exit status: 0 when no file is observe only or not interposable, 1 when some are, 2 for\n"
                   "unusable input\n");
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usbyte-doctor: %s: unknown option (usbyte-doctor --help)\n", argv[i]);
            return UNUSABLE;
        } else {
            files = realloc(files, sizeof(char *) * (size_t)(n + 1));
            files[n++] = strdup(argv[i]);
        }
    }
    if (python) {
        int k = python_files(&files, n);
        if (k < 0) {
            fprintf(stderr, "usbyte-doctor: --python: python3 failed\n");
            return UNUSABLE;
        }
        if (k == 0 && n == 0) {
            fprintf(stderr, "usbyte-doctor: --python: python3 imports neither torch nor horovod (nor nvidia.nccl)\n");
            return UNUSABLE;
        }
        for (int i = n; i < n + k; i++)
            printf("usbyte-doctor: --python: %s\n", files[i]);
        n += k;
    }
    if (!n) {
        fprintf(stderr, "usage: usbyte-doctor [--lib LIBUSBYTE.so] FILE... | usbyte-doctor --python\n");
        return UNUSABLE;
    }
    if (elf_version(EV_CURRENT) == EV_NONE) {
        fprintf(stderr, "usbyte-doctor: libelf: %s\n", elf_errmsg(-1));
        return UNUSABLE;
    }
    find_usbyte(lib);
    int count[V_COUNT] = {0};
    finding *fs = calloc((size_t)n, sizeof *fs);
    if (!fs) {
        fprintf(stderr, "usbyte-doctor: out of memory\n");
        return UNUSABLE;
    }
    for (int i = 0; i < n; i++) {
        count[diagnose(files[i], &fs[i])]++;
        free(files[i]);
    }
    free(files);
    printf("usbyte-doctor: %d file%s:", n, n == 1 ? "" : "s");
    for (int v = 0; v < V_COUNT; v++)
        printf("%s %d %s", v ? "," : "", count[v], verdict_words[v]);
    printf("\n");
    if (python)
        job_verdict(fs, n);
    free(fs);
    return count[V_UNUSABLE] ? UNUSABLE : count[V_OBSERVE] || count[V_NOT] ? OBSERVE : OK;
}
