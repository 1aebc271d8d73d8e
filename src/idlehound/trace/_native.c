/* Decode pieces of Kineto's `traceEvents` array straight into columns: the fast path of trace/_parallel.py.

A piece is taken only when every event in it is one that the msgspec path (trace/_decode.py, then
TableBuilder.add) turns into the same values: strict JSON (UTF-8 checked, escapes checked, no lone surrogate), fields
of the types that path expects, no escaped or repeated field names, no integer of more than 18 digits, names
under 16 KB, events of 40 bytes or more on average, nesting within the limit. On anything else decode() returns None and the piece goes the msgspec way, so the two paths
cannot differ on a piece this one takes (tests/test_native.py holds them together on recorded and hostile traces).

No Python object is made per event, except for the rare fields kept as they are written (input types, memory
totals, string pids): those come back as their JSON text, which the caller decodes once per distinct text.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* MAX_NAME, MIN_EVENT_BYTES, MAX_DEPTH, NO_ID, the column enums, the event and args keys, and the tuple that
   decode() returns, generated from trace/_native_columns.py (the one list the Python side reads too). */
#include "_native_columns.h"

#define BAIL 1                /* not taken: the caller decodes the piece the msgspec way */
#define FAIL (-1)             /* a Python error is set (no memory) */

static PyObject *new_ref(PyObject *o) { /* Py_NewRef, which Python 3.9 lacks */
    Py_INCREF(o);
    return o;
}

/* ---- growable byte buffers ---- */

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = PyMem_Realloc(b->data, cap);
    if (!p) {
        PyErr_NoMemory();
        return FAIL;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *v, size_t n) {
    if (buf_grow(b, n)) return FAIL;
    memcpy(b->data + b->len, v, n);
    b->len += n;
    return 0;
}

static void buf_free(Buf *b) {
    PyMem_Free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- (ph, cat, name) triples, kept across pieces: raw JSON tokens -> ids in order of first appearance ---- */

typedef struct {
    size_t off;            /* into Kinds.store: the three tokens one after another */
    uint32_t len[3];
    uint64_t hash;
} Kind;

typedef struct {
    Buf store;             /* the tokens' bytes */
    Buf kinds;             /* Kind[] */
    int32_t *slots;        /* open addressing: index into kinds, -1 empty */
    size_t nslots;
} Kinds;

static size_t kinds_count(const Kinds *k) { return k->kinds.len / sizeof(Kind); }

static inline uint64_t mix(uint64_t h, uint64_t v) {
    h = (h ^ v) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static uint64_t hash_tokens(const unsigned char *t[3], const uint32_t len[3]) {
    uint64_t h = 0x243f6a8885a308d3ULL, v;
    for (int i = 0; i < 3; i++) {
        uint32_t j = 0;
        for (; j + 8 <= len[i]; j += 8) {
            memcpy(&v, t[i] + j, 8);
            h = mix(h, v);
        }
        v = 0;
        memcpy(&v, t[i] + j, len[i] - j);
        h = mix(h, v ^ ((uint64_t)len[i] << 56));
    }
    return h;
}

static int kinds_rehash(Kinds *k, size_t nslots) {
    int32_t *slots = PyMem_Malloc(nslots * sizeof(int32_t));
    if (!slots) {
        PyErr_NoMemory();
        return FAIL;
    }
    memset(slots, 0xff, nslots * sizeof(int32_t));
    Kind *all = (Kind *)k->kinds.data;
    for (size_t i = 0; i < kinds_count(k); i++) {
        size_t s = all[i].hash & (nslots - 1);
        while (slots[s] >= 0) s = (s + 1) & (nslots - 1);
        slots[s] = (int32_t)i;
    }
    PyMem_Free(k->slots);
    k->slots = slots;
    k->nslots = nslots;
    return 0;
}

/* The id of a triple of tokens, adding it when new; -1 with a Python error set on failure. */
static int64_t kinds_id(Kinds *k, const unsigned char *t[3], const uint32_t len[3]) {
    if (kinds_count(k) >= (size_t)INT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "too many distinct event names");
        return -1;
    }
    if (2 * (kinds_count(k) + 1) > k->nslots && kinds_rehash(k, k->nslots ? 2 * k->nslots : 1024)) return -1;
    uint64_t h = hash_tokens(t, len);
    Kind *all = (Kind *)k->kinds.data;
    size_t s = h & (k->nslots - 1);
    for (; k->slots[s] >= 0; s = (s + 1) & (k->nslots - 1)) {
        Kind *e = &all[k->slots[s]];
        if (e->hash != h || e->len[0] != len[0] || e->len[1] != len[1] || e->len[2] != len[2]) continue;
        const char *p = k->store.data + e->off;
        if (!memcmp(p, t[0], len[0]) && !memcmp(p + len[0], t[1], len[1]) &&
            !memcmp(p + len[0] + len[1], t[2], len[2]))
            return k->slots[s];
    }
    Kind e = {k->store.len, {len[0], len[1], len[2]}, h};
    for (int i = 0; i < 3; i++)
        if (buf_put(&k->store, t[i], len[i])) return -1;
    if (buf_put(&k->kinds, &e, sizeof e)) return -1;
    int32_t id = (int32_t)(kinds_count(k) - 1);
    k->slots[s] = id;
    return id;
}

/* ---- one piece ---- */

typedef struct {
    const unsigned char *p, *end;
    Kinds *kinds, *inputs_seen;   /* (ph, cat, name) triples; input-type texts */
    Buf f[NF], i[NI], kind;       /* per event */
    Buf in_rows, in_ids;          /* events with an input-type list, and the id of its text */
    Buf bps_rows, bps_vals, occ_rows, occ_vals; /* kernel figures, where set */
    PyObject *strids, *mem;       /* lists of (row, JSON text, ...) */
    int64_t row;
} Piece;

static const unsigned char WS[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1};

static inline void skip_ws(Piece *s) {
    while (s->p < s->end && WS[*s->p]) s->p++;
}

static inline int peek(Piece *s) { return s->p < s->end ? *s->p : -1; }

static inline int expect(Piece *s, unsigned char c) {
    skip_ws(s);
    if (peek(s) != c) return BAIL;
    s->p++;
    return 0;
}

/* Bytes a string may hold as they are: printable ASCII but the quote and the backslash. */
static unsigned char PLAIN[256];

static void init_tables(void);

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 sequence starting at p (a byte >= 0x80); its length, or 0 when it is not well formed. */
static int utf8_len(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    int n;
    unsigned lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else return 0;
    if (end - p < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return 0;
    return n;
}

/* Whether any of the 8 bytes at p is a quote, a backslash, a control character or not ASCII (bit tricks on a
   word: a byte b is zero where (b - 1) & ~b has its high bit set, and below 0x20 where (b - 0x20) & ~b has). */
static inline int special8(const unsigned char *p) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t x, q, b;
    memcpy(&x, p, 8);
    q = x ^ (ones * '"');
    b = x ^ (ones * '\\');
    return (((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x) | x) & high ? 1 : 0;
}

/* A string token at s->p (its opening quote): on success s->p is past the closing quote; *escaped says whether
   it holds a backslash. */
static int scan_string(Piece *s, int *escaped) {
    const unsigned char *p = s->p + 1, *end = s->end;
    *escaped = 0;
    for (;;) {
        while (end - p >= 8 && !special8(p)) p += 8;
        while (p < end && PLAIN[*p]) p++;
        if (p >= end) return BAIL;
        unsigned c = *p;
        if (c == '"') break;
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) return BAIL;
            c = p[1];
            if (c == 'u') {
                if (end - p < 6) return BAIL;
                int v = 0;
                for (int i = 2; i < 6; i++) {
                    int h = hexval(p[i]);
                    if (h < 0) return BAIL;
                    v = v * 16 + h;
                }
                if (v >= 0xd800 && v <= 0xdfff) return BAIL; /* surrogates: msgspec's own rules decide */
                p += 6;
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' ||
                       c == 't') {
                p += 2;
            } else return BAIL;
        } else if (c < 0x20) {
            return BAIL;
        } else {
            int n = utf8_len(p, end);
            if (!n) return BAIL;
            p += n;
        }
    }
    s->p = p + 1;
    return 0;
}

typedef struct {
    int is_int, big;
    int64_t i;
    double f;
} Num;

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }

/* The double that the number text start..p stands for: from its digits (m, a power of ten e10, the sign neg)
   where that is exact, else by Python's own conversion of the text (which carries the sign). BAIL when the
   value is not finite or the text not a number Python reads whole. */
static int number_value(const unsigned char *start, const unsigned char *p, int neg, int inexact, uint64_t m,
                        int64_t e10, double *out) {
    double f;
    if (!inexact && m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        f = e10 >= 0 ? (double)m * POW10[e10] : (double)m / POW10[-e10];
    } else {
        char text[400];
        size_t n = (size_t)(p - start);
        if (n >= sizeof text) return BAIL;
        memcpy(text, start, n);
        text[n] = 0;
        char *stop = NULL;
        f = PyOS_string_to_double(text, &stop, NULL);
        if (f == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return BAIL;
        }
        if (stop != text + n) return BAIL;
        neg = 0; /* the text carried its sign */
    }
    if (!isfinite(f)) return BAIL;
    *out = neg ? -f : f;
    return 0;
}

/* A JSON number at s->p. Integers of up to 18 digits are exact (big is set beyond); a float is correctly
   rounded: exactly by one multiply or divide when its digits and power of ten are exact doubles, else by
   Python's own conversion. A float out of double range is not taken. */
static int scan_number(Piece *s, Num *out) {
    const unsigned char *p = s->p, *end = s->end, *start = s->p;
    int neg = 0, inexact = 0, nd = 0;
    uint64_t m = 0;
    int64_t e10 = 0;
    if (p < end && *p == '-') neg = 1, p++;
    if (p >= end || !is_digit(*p)) return BAIL;
    if (*p == '0') p++;
    else
        for (; p < end && is_digit(*p); p++) {
            if (nd < 19) m = m * 10 + (uint64_t)(*p - '0'), nd++;
            else inexact = 1, e10++;
        }
    out->is_int = 1;
    out->big = inexact || nd > 18;
    if (p < end && *p == '.') {
        out->is_int = 0;
        p++;
        if (p >= end || !is_digit(*p)) return BAIL;
        for (; p < end && is_digit(*p); p++) {
            if (m == 0 && *p == '0') e10--;
            else if (nd < 19) m = m * 10 + (uint64_t)(*p - '0'), nd++, e10--;
            else if (*p != '0') inexact = 1;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        out->is_int = 0;
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p == '-', p++;
        if (p >= end || !is_digit(*p)) return BAIL;
        int64_t x = 0;
        for (; p < end && is_digit(*p); p++)
            if (x < 100000) x = x * 10 + (*p - '0');
        e10 += eneg ? -x : x;
    }
    s->p = p;
    if (out->is_int) {
        if (!out->big) {
            out->i = neg ? -(int64_t)m : (int64_t)m;
            out->f = (double)out->i;
        }
        return 0;
    }
    return number_value(start, p, neg, inexact, m, e10, &out->f);
}

static int literal(Piece *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n)) return BAIL;
    s->p += n;
    return 0;
}

/* Any JSON value, checked and passed over. depth: brackets around it. */
static int skip_value(Piece *s, int depth) {
    skip_ws(s);
    int c = peek(s), esc, r;
    Num num;
    switch (c) {
    case '"':
        return scan_string(s, &esc);
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    case '[':
    case '{':
        if (depth + 1 > MAX_DEPTH) return BAIL;
        s->p++;
        skip_ws(s);
        if (peek(s) == (c == '[' ? ']' : '}')) {
            s->p++;
            return 0;
        }
        for (;;) {
            if (c == '{') {
                skip_ws(s);
                if (peek(s) != '"' || scan_string(s, &esc) || expect(s, ':')) return BAIL;
            }
            if ((r = skip_value(s, depth + 1))) return r;
            skip_ws(s);
            int d = peek(s);
            s->p++;
            if (d == ',') continue;
            if (d == (c == '[' ? ']' : '}')) return 0;
            return BAIL;
        }
    default:
        if (c == '-' || is_digit(c)) return scan_number(s, &num);
        return BAIL;
    }
}

static int is_null(Piece *s) { return peek(s) == 'n' && !literal(s, "null", 4); }

/* An integer field: null leaves *v as it is (the field's absent value). */
static int int_field(Piece *s, int64_t *v) {
    if (is_null(s)) return 0;
    Num n;
    int c = peek(s);
    if (!(c == '-' || is_digit(c)) || scan_number(s, &n) || !n.is_int || n.big) return BAIL;
    *v = n.i;
    return 0;
}

/* A number field read as float64 (an integer is converted): null leaves *v as it is. */
static int float_field(Piece *s, double *v) {
    if (is_null(s)) return 0;
    Num n;
    int c = peek(s);
    if (!(c == '-' || is_digit(c)) || scan_number(s, &n) || (n.is_int && n.big)) return BAIL;
    *v = n.f;
    return 0;
}

/* The JSON text of a number (integers only when ints) or null: *text stays NULL for null. */
static int number_text(Piece *s, int ints, const unsigned char **text, Py_ssize_t *len) {
    if (is_null(s)) return 0;
    const unsigned char *a = s->p;
    Num n;
    int c = peek(s);
    if (!(c == '-' || is_digit(c)) || scan_number(s, &n) || n.big || (ints && !n.is_int)) return BAIL;
    *text = a;
    *len = s->p - a;
    return 0;
}

static int append_row(PyObject *list, int64_t row, int k, const unsigned char **text, const Py_ssize_t *len) {
    PyObject *t = PyTuple_New(k + 1);
    if (!t) return FAIL;
    PyObject *r = PyLong_FromLongLong(row);
    if (!r) {
        Py_DECREF(t);
        return FAIL;
    }
    PyTuple_SET_ITEM(t, 0, r);
    for (int i = 0; i < k; i++) {
        PyObject *v = text[i] ? PyBytes_FromStringAndSize((const char *)text[i], len[i]) : new_ref(Py_None);
        if (!v) {
            Py_DECREF(t);
            return FAIL;
        }
        PyTuple_SET_ITEM(t, i + 1, v);
    }
    int rc = PyList_Append(list, t);
    Py_DECREF(t);
    return rc ? FAIL : 0;
}

/* The name between the quotes of a key at s->p, unescaped keys only (an escaped one could spell a field's name). */
static int key(Piece *s, const unsigned char **k, size_t *n) {
    skip_ws(s);
    int esc;
    const unsigned char *a = s->p;
    if (peek(s) != '"' || scan_string(s, &esc) || esc) return BAIL;
    *k = a + 1;
    *n = (size_t)(s->p - a - 2);
    return expect(s, ':');
}

/* The index of the key k[:n] among names (lens: their lengths), or count when it is none of them. */
static int key_index(const unsigned char *k, size_t n, const char *const *names, const size_t *lens, int count) {
    for (int i = 0; i < count; i++)
        if (lens[i] == n && !memcmp(k, names[i], n)) return i;
    return count;
}

/* The next member's key as its index among names (count when it is none of them); a field named twice is not
   taken (msgspec keeps the last; not worth following). */
static int member_key(Piece *s, const char *const *names, const size_t *lens, int count, unsigned *seen,
                      int *index) {
    const unsigned char *k;
    size_t n;
    if (key(s, &k, &n)) return BAIL;
    int i = key_index(k, n, names, lens, count);
    if (i < count) {
        if (*seen & (1u << i)) return BAIL;
        *seen |= 1u << i;
    }
    *index = i;
    return 0;
}

/* One object's end or its next member: 1 when more follow. */
static int next_member(Piece *s, int *more) {
    skip_ws(s);
    int c = peek(s);
    s->p++;
    if (c == ',') *more = 1;
    else if (c == '}') *more = 0;
    else return BAIL;
    return 0;
}

static const unsigned char EMPTY[] = "\"\"";

static size_t ARG_LENS[NA];
/* parse_args keeps the memory totals' texts in mem[a - A_TOTAL_ALLOCATED] */
typedef char mem_args_in_order[A_TOTAL_RESERVED == A_TOTAL_ALLOCATED + 1 && A_DEVICE_TYPE == A_TOTAL_ALLOCATED + 2
                                   ? 1 : -1];

static int parse_args(Piece *s, int64_t *ids, double *fl) {
    const unsigned char *mem[3] = {NULL, NULL, NULL}, *input = NULL;
    Py_ssize_t memlen[3] = {0, 0, 0}, inputlen = 0;
    double bps = NAN, occ = NAN;
    int have_bps = 0, have_occ = 0, more = 1, r;
    unsigned seen = 0;
    s->p++; /* '{' */
    skip_ws(s);
    if (peek(s) == '}') {
        s->p++;
        return 0;
    }
    while (more) {
        int a;
        if (member_key(s, ARG_KEYS, ARG_LENS, NA, &seen, &a)) return BAIL;
        skip_ws(s);
        switch (a) {
        case A_EXTERNAL_ID: case A_EXTERNAL_ID_LC: case A_CORRELATION: case A_PYTHON_ID: case A_PYTHON_PARENT_ID:
            r = int_field(s, &ids[ARG_COLUMN[a]]);
            break;
        case A_NBYTES: case A_MEM_BYTES:
            r = float_field(s, &fl[ARG_COLUMN[a]]);
            break;
        case A_TOTAL_ALLOCATED: case A_TOTAL_RESERVED: case A_DEVICE_TYPE:
            r = number_text(s, a == A_DEVICE_TYPE, &mem[a - A_TOTAL_ALLOCATED], &memlen[a - A_TOTAL_ALLOCATED]);
            break;
        case A_BLOCKS_PER_SM: case A_OCCUPANCY: {
            double *v = a == A_BLOCKS_PER_SM ? &bps : &occ;
            if (is_null(s)) { r = 0; break; }
            r = float_field(s, v);
            *(a == A_BLOCKS_PER_SM ? &have_bps : &have_occ) = 1;
            break;
        }
        case A_INPUT_TYPE:
            if (is_null(s)) { r = 0; break; }
            if (peek(s) != '[') return BAIL;
            input = s->p;
            r = skip_value(s, 3);
            inputlen = s->p - input;
            break;
        default:
            r = skip_value(s, 3);
        }
        if (r || next_member(s, &more)) return r ? r : BAIL;
    }
    if (have_bps && (buf_put(&s->bps_rows, &s->row, 8) || buf_put(&s->bps_vals, &bps, 8))) return FAIL;
    if (have_occ && (buf_put(&s->occ_rows, &s->row, 8) || buf_put(&s->occ_vals, &occ, 8))) return FAIL;
    if (input) {
        const unsigned char *t[3] = {input, EMPTY, EMPTY};
        uint32_t len[3] = {(uint32_t)inputlen, 0, 0};
        if (inputlen > INT32_MAX) return BAIL;
        int64_t id = kinds_id(s->inputs_seen, t, len);
        int32_t id32 = (int32_t)id;
        if (id < 0 || buf_put(&s->in_rows, &s->row, 8) || buf_put(&s->in_ids, &id32, 4)) return FAIL;
    }
    if (mem[0] && append_row(s->mem, s->row, 3, mem, memlen)) return FAIL;
    return 0;
}

static size_t EVENT_LENS[NE];
/* parse_event keeps the tokens of ph, cat and name in tok[e] */
typedef char triple_keys_first[E_PH == 0 && E_CAT == 1 && E_NAME == 2 ? 1 : -1];

/* Append one event's values to the piece's columns. */
static int append_event(Piece *s, const double *fl, const int64_t *ids, int32_t kind) {
    if (s->kind.len + 4 > s->kind.cap) { /* room for many more rows in every column at once */
        size_t rows = s->kind.cap ? s->kind.cap / 2 : 1024;
        for (int i = 0; i < NF; i++)
            if (buf_grow(&s->f[i], rows * 8)) return FAIL;
        for (int i = 0; i < NI; i++)
            if (buf_grow(&s->i[i], rows * 8)) return FAIL;
        if (buf_grow(&s->kind, rows * 4)) return FAIL;
    }
    size_t at = (size_t)s->row;
    for (int i = 0; i < NF; i++) ((double *)s->f[i].data)[at] = fl[i];
    for (int i = 0; i < NI; i++) ((int64_t *)s->i[i].data)[at] = ids[i];
    ((int32_t *)s->kind.data)[at] = kind;
    s->row++;
    for (int i = 0; i < NF; i++) s->f[i].len += 8;
    for (int i = 0; i < NI; i++) s->i[i].len += 8;
    s->kind.len += 4;
    return 0;
}

static int parse_event(Piece *s) {
    double fl[NF] = F_ABSENT;
    int64_t ids[NI] = I_ABSENT;
    const unsigned char *tok[3] = {EMPTY, EMPTY, EMPTY};
    uint32_t toklen[3] = {2, 2, 2};
    unsigned seen = 0;
    int more = 1, r = 0, esc;
    if (expect(s, '{')) return BAIL;
    skip_ws(s);
    if (peek(s) == '}') {
        s->p++;
        more = 0;
    }
    while (more) {
        int e;
        if (member_key(s, EVENT_KEYS, EVENT_LENS, NE, &seen, &e)) return BAIL;
        skip_ws(s);
        const unsigned char *a = s->p;
        switch (e) {
        case E_PH: case E_CAT: case E_NAME:
            if (peek(s) != '"' || scan_string(s, &esc) || s->p - a > MAX_NAME) return BAIL;
            tok[e] = a;
            toklen[e] = (uint32_t)(s->p - a);
            break;
        case E_PID: case E_TID:
            if (peek(s) == '"') {
                if (scan_string(s, &esc)) return BAIL;
                Py_ssize_t len = s->p - a;
                if (append_row(s->strids, s->row * 2 + (e == E_TID), 1, &a, &len)) return FAIL;
                break;
            }
            r = int_field(s, &ids[e == E_PID ? C_PID : C_TID]);
            break;
        case E_TS: case E_DUR:
            r = float_field(s, &fl[e == E_TS ? C_TS : C_DUR]);
            break;
        case E_ARGS:
            if (is_null(s)) break;
            if (peek(s) != '{') return BAIL;
            r = parse_args(s, ids, fl);
            break;
        default:
            r = skip_value(s, 2);
        }
        if (r || next_member(s, &more)) return r ? r : BAIL;
    }
    int64_t id = kinds_id(s->kinds, tok, toklen);
    if (id < 0) return FAIL;
    return append_event(s, fl, ids, (int32_t)id);
}

/* The array elements in text: ws (event (ws , ws event)*)? ws. */
static int parse_piece(Piece *s) {
    /* Events of a few bytes ({} repeated: not Kineto's, whose smallest take ~60) are left to msgspec, which drops
       the empty ones at once: here each costs 132 bytes of columns until the piece is done. */
    int64_t most = (s->end - s->p) / MIN_EVENT_BYTES + 16;
    skip_ws(s);
    if (s->p == s->end) return 0;
    for (;;) {
        if (s->row >= most) return BAIL;
        int r = parse_event(s);
        if (r) return r;
        skip_ws(s);
        if (s->p == s->end) return 0;
        if (*s->p != ',') return BAIL;
        s->p++;
    }
}

static void init_tables(void) {
    for (int c = 0x20; c < 0x7f; c++) PLAIN[c] = 1;
    PLAIN['"'] = PLAIN['\\'] = 0;
    for (int i = 0; i < NA; i++) ARG_LENS[i] = strlen(ARG_KEYS[i]);
    for (int i = 0; i < NE; i++) EVENT_LENS[i] = strlen(EVENT_KEYS[i]);
}

/* ---- the Python type ---- */

typedef struct {
    PyObject_HEAD Kinds kinds, inputs;
    size_t reported, inputs_reported; /* texts already handed to the caller */
} Decoder;

static void kinds_free(Kinds *k) {
    buf_free(&k->store);
    buf_free(&k->kinds);
    PyMem_Free(k->slots);
}

static void Decoder_dealloc(Decoder *self) {
    kinds_free(&self->kinds);
    kinds_free(&self->inputs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len); }

/* The texts added to k since *reported, as (ph, cat, name) tuples (ntok 3) or single texts (ntok 1). */
static PyObject *new_texts(Kinds *k, size_t *reported, int ntok) {
    size_t n = kinds_count(k);
    PyObject *out = PyList_New((Py_ssize_t)(n - *reported));
    if (!out) return NULL;
    Kind *all = (Kind *)k->kinds.data;
    for (size_t i = *reported; i < n; i++) {
        const char *p = k->store.data + all[i].off;
        Py_ssize_t a = all[i].len[0], b = all[i].len[1], c = all[i].len[2];
        PyObject *t = ntok == 3 ? Py_BuildValue("(y#y#y#)", p, a, p + a, b, p + a + b, c)
                                : PyBytes_FromStringAndSize(p, a);
        if (!t) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)(i - *reported), t);
    }
    *reported = n;
    return out;
}

static void piece_free(Piece *s) {
    for (int i = 0; i < NF; i++) buf_free(&s->f[i]);
    for (int i = 0; i < NI; i++) buf_free(&s->i[i]);
    buf_free(&s->kind);
    buf_free(&s->bps_rows);
    buf_free(&s->bps_vals);
    buf_free(&s->occ_rows);
    buf_free(&s->occ_vals);
    buf_free(&s->in_rows);
    buf_free(&s->in_ids);
    Py_XDECREF(s->strids);
    Py_XDECREF(s->mem);
}

static PyObject *piece_result(Decoder *self, Piece *s) {
    PyObject *kinds = new_texts(&self->kinds, &self->reported, 3);
    if (!kinds) return NULL;
    PyObject *input_texts = new_texts(&self->inputs, &self->inputs_reported, 1);
    if (!input_texts) {
        Py_DECREF(kinds);
        return NULL;
    }
    return Py_BuildValue(PIECE_FORMAT, PIECE_VALUES(s)); /* the N items: references handed to the tuple */
}

PyDoc_STRVAR(decode_doc,
             "decode(buf, lo, hi) -> tuple or None\n\n"
             "The events of buf[lo:hi] (array elements, no brackets) as columns, or None when the piece is one\n"
             "to decode the msgspec way. trace/_native_columns.py (NativePiece) names the tuple's fields.");

static PyObject *Decoder_decode(Decoder *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &lo, &hi)) return NULL;
    if (lo < 0 || hi < lo || hi > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "range outside the buffer");
        return NULL;
    }
    Piece s;
    memset(&s, 0, sizeof s);
    s.p = (const unsigned char *)view.buf + lo;
    s.end = (const unsigned char *)view.buf + hi;
    s.kinds = &self->kinds;
    s.inputs_seen = &self->inputs;
    PyObject *out = NULL;
    s.strids = PyList_New(0);
    s.mem = PyList_New(0);
    if (s.strids && s.mem) {
        int r = parse_piece(&s);
        if (r == 0) out = piece_result(self, &s);
        else if (r == BAIL) out = new_ref(Py_None);
    }
    piece_free(&s);
    PyBuffer_Release(&view);
    return out;
}

static PyObject *Decoder_nbytes(Decoder *self, void *closure) {
    (void)closure;
    const Kinds *k[2] = {&self->kinds, &self->inputs};
    size_t n = 0;
    /* what is held (the bytes of the tokens and their entries), not the buffers' power-of-two capacity */
    for (int i = 0; i < 2; i++) n += k[i]->store.len + k[i]->kinds.len + k[i]->nslots * 4;
    return PyLong_FromSize_t(n);
}

static PyMethodDef Decoder_methods[] = {
    {"decode", (PyCFunction)Decoder_decode, METH_VARARGS, decode_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Decoder_getset[] = {
    {"nbytes", (getter)Decoder_nbytes, NULL, "memory held for the distinct (ph, cat, name) triples and input-type texts", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DecoderType = {
    .ob_base = PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "idlehound.trace._native.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Decodes pieces of one trace's events; keeps the distinct (ph, cat, name) triples across pieces.",
    .tp_methods = Decoder_methods,
    .tp_getset = Decoder_getset,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "Kineto trace events to columns, in C.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
    init_tables();
    if (PyType_Ready(&DecoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
