/* gwtools._fastjson: list bodies of payments or refunds -> Arrow column buffers, without
 * Python objects.
 *
 * scan(resource, bodies) reads list response bodies of either API variant and writes the
 * stage-1 columns of the fast path (see _FastColumns in _normalize.py) straight into
 * Arrow-layout buffers: int64 offsets + UTF-8 data + validity bits for strings, int64 for
 * ints and timestamps (microseconds), bits for bools. Python wraps them with
 * pa.Array.from_buffers and finishes them with the same code as the msgspec path.
 *
 * The scanner is conservative: a body it does not fully understand (invalid JSON or UTF-8,
 * an unknown field inside a sub-object, a duplicate key, a value of an unexpected type, a
 * timestamp of an uncommon shape, an escaped key...) is handed back whole to the existing
 * path, so that every body it accepts gives exactly the rows the msgspec path gives. Payment
 * rows whose `extra` it cannot render byte-identically (unknown top-level fields, a nested
 * next_action, strings with escapes msgspec would write differently) are listed for Python
 * to patch; refunds have no lenient reading, so an unknown refund field refuses the body.
 *
 * Every read is bounds-checked against the body's end. The GIL is released while scanning:
 * the bodies are immutable bytes objects referenced for the whole call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ------------------------------------------------------------------ growable buffers */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buf;

static int buf_grow(Buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    uint8_t *d = realloc(b->data, cap);
    if (!d) return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static inline int buf_reserve(Buf *b, size_t extra) {
    if (__builtin_expect(b->cap - b->len >= extra, 1)) return 0;
    return buf_grow(b, extra);
}

static inline int buf_put(Buf *b, const void *src, size_t n) {
    if (n == 0) return 0; /* (b->data may still be NULL) */
    if (buf_reserve(b, n)) return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

static inline int buf_byte(Buf *b, uint8_t c) { return buf_put(b, &c, 1); }

static inline int buf_i64(Buf *b, int64_t v) { return buf_put(b, &v, sizeof v); }

/* Set bit i (0 or 1) of a bitmap, growing it with zero bytes as needed. */
static inline int bit_put(Buf *b, size_t i, int v) {
    size_t need = i / 8 + 1;
    if (__builtin_expect(need > b->len, 0)) {
        if (buf_reserve(b, need - b->len)) return -1;
        memset(b->data + b->len, 0, need - b->len);
        b->len = need;
    }
    if (v)
        b->data[i >> 3] |= (uint8_t)(1u << (i & 7));
    else
        b->data[i >> 3] &= (uint8_t)~(1u << (i & 7));
    return 0;
}

/* ------------------------------------------------------------------ Buffer: owned memory for Python */

typedef struct {
    PyObject_HEAD uint8_t *data;
    Py_ssize_t len;
} BufferObject;

static void Buffer_dealloc(BufferObject *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->len, 1, flags);
}

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gwtools._fastjson.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory written by the scanner, exposed through the buffer protocol (read-only).",
};

/* Hand a Buf's memory to a new Buffer object (the Buf is left empty). */
static PyObject *buffer_from(Buf *b) {
    BufferObject *obj = PyObject_New(BufferObject, &BufferType);
    if (!obj) return NULL;
    if (!b->data) {
        b->data = malloc(1); /* a valid pointer for an empty buffer */
        if (!b->data) {
            Py_DECREF(obj);
            return PyErr_NoMemory();
        }
    }
    obj->data = b->data;
    obj->len = (Py_ssize_t)b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return (PyObject *)obj;
}

/* ------------------------------------------------------------------ record layout */

/* Value slots of one record (payment or refund). */
enum {
    /* string columns */
    S_ID, S_CURRENCY, S_STATUS, S_DESCRIPTION, S_PAYMENT_METHOD, S_CUSTOMER, S_RECEIPT_EMAIL,
    S_FAILURE_CODE, S_DECLINE_CODE, S_D_TYPE, S_D_BRAND, S_D_BANK_CODE, S_D_BANK,
    S_C_BRAND, S_F_BANK_CODE, S_F_BANK, S_E_CODE, S_E_DECLINE_CODE,
    N_STR_COLS,
    /* int columns */
    I_AMOUNT = N_STR_COLS, I_REFUNDED_AMOUNT,
    /* bool columns */
    B_LIVEMODE, B_CAPTURED, B_REFUNDED,
    /* timestamp columns */
    T_CREATED, T_CREATED_AT, T_CAPTURED_AT, T_UPDATED_AT, T_EXPIRES_AT,
    /* raw JSON text */
    R_METADATA,
    /* sub-objects present (non-null) */
    P_DETAILS, P_CARD, P_FPX, P_ERROR,
    /* fields without a column: the extra text */
    X_AMOUNT_CAPTURED, X_CANCEL_URL, X_CAPTURE_METHOD, X_FAILURE_MESSAGE, X_RECEIPT_URL,
    X_REDIRECT_URL, X_SUCCESS_URL,
    X_E_DOC_URL, X_E_MESSAGE, X_E_PARAM, X_E_TYPE,
    X_D_COUNTRY, X_D_EXP_MONTH, X_D_EXP_YEAR, X_D_FUNDING, X_D_LAST4,
    X_C_COUNTRY, X_C_EXP_MONTH, X_C_EXP_YEAR, X_C_FUNDING, X_C_LAST4,
    S_REASON, S_PAYMENT_ID, S_PAYMENT, /* refunds */
    P_NEXT_ACTION, /* next_action is an object (its members are in Rec.next) */
    NO_SLOT,       /* fields read and dropped: object, client_secret */
    N_SLOTS
};

/* How a field's value is read. */
enum { K_STR, K_INT, K_BOOL, K_TS, K_RAW, K_SUB, K_STR_DROP, K_RAW_DROP, K_FREE_OBJ };

typedef struct Table Table;
typedef struct {
    const char *name;
    uint8_t nlen;
    uint8_t kind;
    uint8_t slot;
    const Table *sub;
} Field;
struct Table {
    const Field *fields;
    int n;
    int id; /* index of its key-order memory (Follow) */
};

#define F(name, kind, slot) {name, sizeof(name) - 1, kind, slot, NULL}
#define SUB(name, slot, table) {name, sizeof(name) - 1, K_SUB, slot, table}

static const Field card_fields[] = {
    F("brand", K_STR, S_C_BRAND),         F("last4", K_STR, X_C_LAST4),
    F("exp_month", K_INT, X_C_EXP_MONTH), F("exp_year", K_INT, X_C_EXP_YEAR),
    F("funding", K_STR, X_C_FUNDING),     F("country", K_STR, X_C_COUNTRY),
};
static const Table card_table = {card_fields, 6, 0};

static const Field fpx_fields[] = {F("bank_code", K_STR, S_F_BANK_CODE), F("bank", K_STR, S_F_BANK)};
static const Table fpx_table = {fpx_fields, 2, 1};

static const Field details_fields[] = {
    F("type", K_STR, S_D_TYPE),
    F("brand", K_STR, S_D_BRAND),
    F("last4", K_STR, X_D_LAST4),
    F("exp_month", K_INT, X_D_EXP_MONTH),
    F("exp_year", K_INT, X_D_EXP_YEAR),
    F("funding", K_STR, X_D_FUNDING),
    F("country", K_STR, X_D_COUNTRY),
    F("bank_code", K_STR, S_D_BANK_CODE),
    F("bank", K_STR, S_D_BANK),
    SUB("card", P_CARD, &card_table),
    SUB("fpx", P_FPX, &fpx_table),
};
static const Table details_table = {details_fields, 11, 2};

static const Field error_fields[] = {
    F("code", K_STR, S_E_CODE),       F("decline_code", K_STR, S_E_DECLINE_CODE),
    F("message", K_STR, X_E_MESSAGE), F("type", K_STR, X_E_TYPE),
    F("param", K_STR, X_E_PARAM),     F("doc_url", K_STR, X_E_DOC_URL),
};
static const Table error_table = {error_fields, 6, 3};

/* The order of FastPayment (the sandbox's order of variant B), so the guess of the next
 * key usually hits. */
static const Field payment_fields[] = {
    F("id", K_STR, S_ID),
    F("object", K_STR_DROP, NO_SLOT),
    F("amount", K_INT, I_AMOUNT),
    F("amount_captured", K_INT, X_AMOUNT_CAPTURED),
    F("currency", K_STR, S_CURRENCY),
    F("status", K_STR, S_STATUS),
    F("description", K_STR, S_DESCRIPTION),
    F("payment_method", K_STR, S_PAYMENT_METHOD),
    SUB("payment_method_details", P_DETAILS, &details_table),
    F("customer", K_STR, S_CUSTOMER),
    F("capture_method", K_STR, X_CAPTURE_METHOD),
    F("captured", K_BOOL, B_CAPTURED),
    F("captured_at", K_TS, T_CAPTURED_AT),
    F("refunded", K_BOOL, B_REFUNDED),
    F("refunded_amount", K_INT, I_REFUNDED_AMOUNT),
    F("metadata", K_RAW, R_METADATA),
    F("failure_code", K_STR, S_FAILURE_CODE),
    F("failure_message", K_STR, X_FAILURE_MESSAGE),
    F("decline_code", K_STR, S_DECLINE_CODE),
    SUB("last_payment_error", P_ERROR, &error_table),
    F("receipt_email", K_STR, S_RECEIPT_EMAIL),
    F("receipt_url", K_STR, X_RECEIPT_URL),
    F("client_secret", K_RAW_DROP, NO_SLOT),
    F("next_action", K_FREE_OBJ, P_NEXT_ACTION),
    F("redirect_url", K_STR, X_REDIRECT_URL),
    F("success_url", K_STR, X_SUCCESS_URL),
    F("cancel_url", K_STR, X_CANCEL_URL),
    F("created", K_TS, T_CREATED),
    F("created_at", K_TS, T_CREATED_AT),
    F("updated_at", K_TS, T_UPDATED_AT),
    F("expires_at", K_TS, T_EXPIRES_AT),
    F("livemode", K_BOOL, B_LIVEMODE),
};
static const Table payment_table = {payment_fields, 32, 4};

/* The order of FastRefund. */
static const Field refund_fields[] = {
    F("id", K_STR, S_ID),
    F("object", K_STR_DROP, NO_SLOT),
    F("payment_id", K_STR, S_PAYMENT_ID),
    F("payment", K_STR, S_PAYMENT),
    F("amount", K_INT, I_AMOUNT),
    F("currency", K_STR, S_CURRENCY),
    F("reason", K_STR, S_REASON),
    F("status", K_STR, S_STATUS),
    F("metadata", K_RAW, R_METADATA),
    F("created", K_TS, T_CREATED),
    F("created_at", K_TS, T_CREATED_AT),
    F("livemode", K_BOOL, B_LIVEMODE),
};
static const Table refund_table = {refund_fields, 12, 5};
#define N_TABLES 6
#define MAX_FIELDS 32

/* The order keys came in, per object shape: follow[t][k + 1] is the field that came after
 * field k last time (follow[t][0]: the first one). A gateway sends its keys in one order,
 * so after the first record the next key is nearly always guessed at the first try. */
typedef uint8_t Follow[N_TABLES][MAX_FIELDS + 1];

/* The stage-1 columns of each resource (the names _FastColumns gives them in Python). */
typedef struct {
    const char *name;
    /* s string, i int64, b bool, t timestamp (int64 microseconds), p presence bool,
     * r raw JSON text ("" when absent) */
    char kind;
    int slot;
} Col;

static const Col payment_cols[] = {
    {"id", 's', S_ID},
    {"currency", 's', S_CURRENCY},
    {"status", 's', S_STATUS},
    {"description", 's', S_DESCRIPTION},
    {"payment_method", 's', S_PAYMENT_METHOD},
    {"customer", 's', S_CUSTOMER},
    {"receipt_email", 's', S_RECEIPT_EMAIL},
    {"failure_code", 's', S_FAILURE_CODE},
    {"decline_code", 's', S_DECLINE_CODE},
    {"payment_method_details.type", 's', S_D_TYPE},
    {"payment_method_details.brand", 's', S_D_BRAND},
    {"payment_method_details.bank_code", 's', S_D_BANK_CODE},
    {"payment_method_details.bank", 's', S_D_BANK},
    {"payment_method_details.card.brand", 's', S_C_BRAND},
    {"payment_method_details.fpx.bank_code", 's', S_F_BANK_CODE},
    {"payment_method_details.fpx.bank", 's', S_F_BANK},
    {"last_payment_error.code", 's', S_E_CODE},
    {"last_payment_error.decline_code", 's', S_E_DECLINE_CODE},
    {"amount", 'i', I_AMOUNT},
    {"refunded_amount", 'i', I_REFUNDED_AMOUNT},
    {"livemode", 'b', B_LIVEMODE},
    {"captured", 'b', B_CAPTURED},
    {"refunded", 'b', B_REFUNDED},
    {"created", 't', T_CREATED},
    {"created_at", 't', T_CREATED_AT},
    {"captured_at", 't', T_CAPTURED_AT},
    {"updated_at", 't', T_UPDATED_AT},
    {"expires_at", 't', T_EXPIRES_AT},
    {"payment_method_details.card?", 'p', P_CARD},
    {"payment_method_details.fpx?", 'p', P_FPX},
    {"metadata", 'r', R_METADATA},
};

static const Col refund_cols[] = {
    {"id", 's', S_ID},
    {"currency", 's', S_CURRENCY},
    {"status", 's', S_STATUS},
    {"reason", 's', S_REASON},
    {"payment_id", 's', S_PAYMENT_ID},
    {"payment", 's', S_PAYMENT},
    {"amount", 'i', I_AMOUNT},
    {"livemode", 'b', B_LIVEMODE},
    {"created", 't', T_CREATED},
    {"created_at", 't', T_CREATED_AT},
    {"metadata", 'r', R_METADATA},
};

#define MAX_COLS 32
typedef struct {
    const char *resource;
    const Table *table;
    const Col *cols;
    int ncols;
    int extra; /* payments: the extra column (refunds: made from the status in Python) */
} Shape;

static const Shape shapes[] = {
    {"payments", &payment_table, payment_cols, (int)(sizeof payment_cols / sizeof(Col)), 1},
    {"refunds", &refund_table, refund_cols, (int)(sizeof refund_cols / sizeof(Col)), 0},
};

/* One value of a record: absent (or null), or where it is in the body. */
enum { V_ESCAPED = 1, V_ODD_ESCAPE = 2 };
typedef struct {
    union {
        const uint8_t *p; /* strings: the text between the quotes; raw: the value */
        int64_t i;        /* ints, bools, timestamps (microseconds) */
    };
    uint32_t len;
    uint8_t present;
    uint8_t flags;
} Val;

/* A member of a free-form object: its key (between the quotes) and its value's text. */
#define MAX_MEMBERS 16
typedef struct {
    const uint8_t *key, *value;
    uint32_t klen, vlen;
} Member;

typedef struct {
    Val v[N_SLOTS];
    const uint8_t *start, *end; /* the record's text */
    int patch;                  /* extra must be rendered by Python */
    int n_next;                 /* next_action's members, sorted by key (if it is there) */
    Member next[MAX_MEMBERS];   /* (not cleared between records: read only up to n_next) */
} Rec;

/* ------------------------------------------------------------------ JSON scanning */

#define MAX_DEPTH 64

typedef struct {
    const uint8_t *p, *end;
    uint8_t (*follow)[MAX_FIELDS + 1];
} Cur;

static inline void skip_ws(Cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* After an item of an object or array: 1 if ',' follows (consumed: another item comes), 0 if
 * `close` ends the container (consumed), -1 for anything else or the end of the body. */
static inline int after_item(Cur *c, uint8_t close) {
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == ',') {
        c->p++;
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return -1;
}

static inline int hexval(uint8_t h) {
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

static int read_hex4(const uint8_t *p, const uint8_t *end, unsigned *out) {
    if (end - p < 4) return -1;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0) return -1;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

/* A string at c->p (the opening quote). Validates UTF-8 and escapes; on success c->p is past
 * the closing quote, *s and *n the text between the quotes, *flags V_ESCAPED if it holds escapes
 * and V_ODD_ESCAPE if msgspec would write it differently (see escape_is_msgspecs). */
static int scan_string(Cur *c, const uint8_t **s, size_t *n, uint8_t *flags) {
    const uint8_t *p = c->p + 1, *end = c->end;
    uint8_t fl = 0;
    *s = p;
    for (;;) {
        /* the common case: printable ASCII */
#ifdef __SSE2__
        /* 16 bytes at a time: stop at a quote, a backslash, a control or a non-ASCII byte
         * (the signed compare: bytes >= 0x80 are negative, so below 0x20 too) */
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                      space = _mm_set1_epi8(0x20);
        while (end - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
                                                     _mm_cmpeq_epi8(x, backslash)),
                                        _mm_cmplt_epi8(x, space));
            int mask = _mm_movemask_epi8(stop);
            if (mask) {
                p += __builtin_ctz((unsigned)mask);
                break;
            }
            p += 16;
        }
#endif
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        if (p >= end) return -1;
        uint8_t ch = *p;
        if (ch == '"') break;
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            fl |= V_ESCAPED;
            if (end - p < 2) return -1;
            uint8_t e = p[1];
            switch (e) {
            case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case '/':
                fl |= V_ODD_ESCAPE;
                p += 2;
                break;
            case 'u': {
                unsigned u;
                if (read_hex4(p + 2, end, &u)) return -1;
                if (u >= 0xDC00 && u <= 0xDFFF) return -1; /* a lone low surrogate */
                if (u >= 0xD800 && u <= 0xDBFF) {
                    unsigned lo;
                    if (end - p < 12 || p[6] != '\\' || p[7] != 'u') return -1;
                    if (read_hex4(p + 8, end, &lo) || lo < 0xDC00 || lo > 0xDFFF) return -1;
                    fl |= V_ODD_ESCAPE;
                    p += 12;
                    break;
                }
                /* msgspec writes \u00XX, lowercase, for control characters without a short
                 * escape, and every other character as itself. */
                int short_form = u == 8 || u == 9 || u == 10 || u == 12 || u == 13;
                int lower = 1;
                for (int k = 2; k < 6; k++)
                    if (p[k] >= 'A' && p[k] <= 'F') lower = 0;
                if (u >= 0x20 || short_form || !lower) fl |= V_ODD_ESCAPE;
                p += 6;
                break;
            }
            default:
                return -1;
            }
            continue;
        }
        /* multi-byte UTF-8 */
        if (ch >= 0xC2 && ch <= 0xDF) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return -1;
            p += 2;
        } else if (ch >= 0xE0 && ch <= 0xEF) {
            if (end - p < 3) return -1;
            uint8_t lo = 0x80, hi = 0xBF;
            if (ch == 0xE0) lo = 0xA0;
            if (ch == 0xED) hi = 0x9F;
            if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80) return -1;
            p += 3;
        } else if (ch >= 0xF0 && ch <= 0xF4) {
            if (end - p < 4) return -1;
            uint8_t lo = 0x80, hi = 0xBF;
            if (ch == 0xF0) lo = 0x90;
            if (ch == 0xF4) hi = 0x8F;
            if (p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
                return -1;
            p += 4;
        } else {
            return -1;
        }
    }
    *n = (size_t)(p - *s);
    *flags = fl;
    c->p = p + 1;
    return 0;
}

/* The text of a validated string with its escapes resolved, appended to out. */
static int unescape_into(Buf *out, const uint8_t *p, size_t n) {
    const uint8_t *end = p + n;
    if (n == 0) return 0;
    if (buf_reserve(out, n)) return -1; /* unescaped text is never longer */
    uint8_t *o = out->data + out->len;
    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        uint8_t e = p[1];
        unsigned u;
        switch (e) {
        case 'b': *o++ = '\b'; p += 2; continue;
        case 'f': *o++ = '\f'; p += 2; continue;
        case 'n': *o++ = '\n'; p += 2; continue;
        case 'r': *o++ = '\r'; p += 2; continue;
        case 't': *o++ = '\t'; p += 2; continue;
        case 'u':
            read_hex4(p + 2, end, &u);
            p += 6;
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                read_hex4(p + 2, end, &lo);
                p += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (u < 0x80) {
                *o++ = (uint8_t)u;
            } else if (u < 0x800) {
                *o++ = (uint8_t)(0xC0 | (u >> 6));
                *o++ = (uint8_t)(0x80 | (u & 0x3F));
            } else if (u < 0x10000) {
                *o++ = (uint8_t)(0xE0 | (u >> 12));
                *o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                *o++ = (uint8_t)(0x80 | (u & 0x3F));
            } else {
                *o++ = (uint8_t)(0xF0 | (u >> 18));
                *o++ = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
                *o++ = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                *o++ = (uint8_t)(0x80 | (u & 0x3F));
            }
            continue;
        default: /* '"', '\\', '/' */
            *o++ = e;
            p += 2;
            continue;
        }
    }
    out->len = (size_t)(o - out->data);
    return 0;
}

static inline int is_digit(uint8_t ch) { return ch >= '0' && ch <= '9'; }

/* A JSON number; *is_int says whether it has neither fraction nor exponent. With
 * any_typed, numbers msgspec refuses to decode as Python values (a float beyond the double
 * range: "Number out of range") are refused, with a wide margin. */
static int skip_number(Cur *c, int *is_int, int any_typed) {
    const uint8_t *p = c->p, *end = c->end;
    int integral = 1;
    long int_digits = 0, exp = 0;
    if (p < end && *p == '-') p++;
    if (p >= end) return -1;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && is_digit(*p)) {
            p++;
            int_digits++;
        }
    } else {
        return -1;
    }
    if (p < end && *p == '.') {
        integral = 0;
        p++;
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integral = 0;
        p++;
        int neg = 0;
        if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
        if (p >= end || !is_digit(*p)) return -1;
        while (p < end && is_digit(*p)) {
            if (exp < 100000) exp = exp * 10 + (*p - '0');
            p++;
        }
        if (neg) exp = -exp;
    }
    if (any_typed && !integral && int_digits + exp > 300) return -1;
    c->p = p;
    if (is_int) *is_int = integral;
    return 0;
}

/* An int that fits int64 comfortably (at most 18 digits); anything else is refused. */
static int scan_int(Cur *c, int64_t *out) {
    const uint8_t *p = c->p, *end = c->end;
    int neg = 0;
    if (p < end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= end || !is_digit(*p)) return -1;
    if (*p == '0' && p + 1 < end && is_digit(p[1])) return -1;
    int64_t v = 0;
    int digits = 0;
    while (p < end && is_digit(*p)) {
        if (++digits > 18) return -1;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return -1; /* a float */
    c->p = p;
    *out = neg ? -v : v;
    return 0;
}

static int match_lit(Cur *c, const char *lit, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0) return -1;
    c->p += n;
    return 0;
}

/* Any JSON value, validated. */
static int skip_value(Cur *c, int depth, int any_typed) {
    if (depth > MAX_DEPTH) return -1;
    skip_ws(c);
    if (c->p >= c->end) return -1;
    const uint8_t *s;
    size_t n;
    uint8_t fl;
    switch (*c->p) {
    case '"':
        return scan_string(c, &s, &n, &fl);
    case '{':
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 0;
        }
        for (;;) {
            skip_ws(c);
            if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &n, &fl)) return -1;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':') return -1;
            c->p++;
            if (skip_value(c, depth + 1, any_typed)) return -1;
            int sep = after_item(c, '}');
            if (sep <= 0) return sep;
        }
    case '[':
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return 0;
        }
        for (;;) {
            if (skip_value(c, depth + 1, any_typed)) return -1;
            int sep = after_item(c, ']');
            if (sep <= 0) return sep;
        }
    case 't':
        return match_lit(c, "true", 4);
    case 'f':
        return match_lit(c, "false", 5);
    case 'n':
        return match_lit(c, "null", 4);
    default:
        return skip_number(c, NULL, any_typed);
    }
}

/* ------------------------------------------------------------------ timestamps */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits_at(const uint8_t *p, int n, int *out) {
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (!is_digit(p[k])) return -1;
        v = v * 10 + (p[k] - '0');
    }
    *out = v;
    return 0;
}

/* 'YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|+HH:MM|-HH:MM)' -> microseconds since the epoch. Only
 * years 1900-2199, where Arrow's cast and pandas' ISO 8601 parser (the msgspec path's two
 * parsers) agree; any other shape is left to the msgspec path. */
static int parse_iso(const uint8_t *p, size_t n, int64_t *out) {
    int Y, M, D, h, mi, s, oh = 0, om = 0;
    if (n < 20) return -1;
    if (digits_at(p, 4, &Y) || p[4] != '-' || digits_at(p + 5, 2, &M) || p[7] != '-' ||
        digits_at(p + 8, 2, &D) || p[10] != 'T' || digits_at(p + 11, 2, &h) || p[13] != ':' ||
        digits_at(p + 14, 2, &mi) || p[16] != ':' || digits_at(p + 17, 2, &s))
        return -1;
    size_t k = 19;
    int64_t frac = 0;
    if (p[k] == '.') {
        k++;
        int nd = 0;
        while (k < n && is_digit(p[k]) && nd < 7) {
            frac = frac * 10 + (p[k] - '0');
            k++;
            nd++;
        }
        if (nd == 0 || nd > 6) return -1;
        for (; nd < 6; nd++) frac *= 10;
    }
    if (k >= n) return -1;
    int sign = 0;
    if (p[k] == 'Z') {
        k++;
    } else if (p[k] == '+' || p[k] == '-') {
        sign = p[k] == '+' ? 1 : -1;
        if (n - k < 6 || digits_at(p + k + 1, 2, &oh) || p[k + 3] != ':' ||
            digits_at(p + k + 4, 2, &om))
            return -1;
        if (oh > 23 || om > 59) return -1;
        k += 6;
    } else {
        return -1;
    }
    if (k != n) return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (Y < 1900 || Y > 2199 || M < 1 || M > 12 || D < 1 || h > 23 || mi > 59 || s > 59)
        return -1;
    int leap = (Y % 4 == 0 && Y % 100 != 0) || Y % 400 == 0;
    if (D > mdays[M - 1] + (M == 2 && leap)) return -1;
    int64_t secs = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + mi * 60 + s;
    secs -= (int64_t)sign * (oh * 3600 + om * 60);
    *out = secs * 1000000 + frac;
    return 0;
}

/* Unix seconds of 0001-01-01 and 9999-12-31T23:59:59 (_MIN_UNIX, _MAX_UNIX in Python). */
#define MIN_UNIX (-62135596800LL)
#define MAX_UNIX 253402300799LL

/* ------------------------------------------------------------------ records */

/* next_action, a free-form object msgspec re-encodes with sorted keys: its members are kept
 * for write_extra when their text is what msgspec writes (keys without escapes; strings with
 * msgspec's escapes, ints other than -0, true, false, null), else the row is a patch row. */
static int read_free_object(Cur *c, Rec *r, int depth) {
    const uint8_t *start = c->p;
    int n = 0, plain = 1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        r->n_next = 0;
        return 0;
    }
    for (;;) {
        skip_ws(c);
        const uint8_t *key, *s;
        size_t klen, slen;
        uint8_t fl;
        if (c->p >= c->end || *c->p != '"' || scan_string(c, &key, &klen, &fl)) return -1;
        if (fl) plain = 0;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return -1;
        const uint8_t *value = c->p;
        uint8_t ch = *c->p;
        if (ch == '"') {
            if (scan_string(c, &s, &slen, &fl)) return -1;
            if (fl & V_ODD_ESCAPE) plain = 0;
        } else if (ch == '-' || is_digit(ch)) {
            int is_int;
            if (skip_number(c, &is_int, 1)) return -1;
            if (!is_int || (c->p - value == 2 && value[0] == '-' && value[1] == '0')) plain = 0;
        } else if (ch == 't' || ch == 'f' || ch == 'n') {
            if (skip_value(c, depth + 1, 1)) return -1;
        } else { /* nested: msgspec sorts inside it too; left to Python */
            if (skip_value(c, depth + 1, 1)) return -1;
            plain = 0;
        }
        if (klen > UINT32_MAX || c->p - value > UINT32_MAX) return -1;
        if (n < MAX_MEMBERS) {
            Member m = {key, value, (uint32_t)klen, (uint32_t)(c->p - value)};
            /* insertion by key: bytewise order of UTF-8 is code point order, Python's */
            int k = n++;
            while (k > 0) {
                const Member *o = &r->next[k - 1];
                size_t common = o->klen < m.klen ? o->klen : m.klen;
                int cmp = memcmp(o->key, m.key, common);
                if (cmp == 0 && o->klen == m.klen) plain = 0; /* a duplicate key */
                if (cmp < 0 || (cmp == 0 && o->klen <= m.klen)) break;
                r->next[k] = *o;
                k--;
            }
            r->next[k] = m;
        } else {
            plain = 0;
        }
        int sep = after_item(c, '}');
        if (sep < 0) return -1;
        if (sep == 0) break;
    }
    if ((size_t)(c->p - start) > UINT32_MAX) return -1;
    r->n_next = n;
    if (!plain) r->patch = 1;
    return 0;
}

/* The value of one known field into its slot. 0: fine; -1: refuse the body. */
static int read_field(Cur *c, const Field *f, Rec *r, int depth) {
    Val *v = &r->v[f->slot];
    skip_ws(c);
    if (c->p >= c->end) return -1;
    uint8_t ch = *c->p;
    if (ch == 'n' && f->kind != K_RAW && f->kind != K_RAW_DROP) {
        /* null is "not there" for every typed field */
        if (match_lit(c, "null", 4)) return -1;
        if (f->slot != NO_SLOT) v->present = 0;
        return 0;
    }
    const uint8_t *s;
    size_t n;
    uint8_t fl;
    switch (f->kind) {
    case K_STR:
    case K_STR_DROP:
        if (ch != '"' || scan_string(c, &s, &n, &fl)) return -1;
        if (n > UINT32_MAX) return -1;
        if (f->kind == K_STR) {
            v->p = s;
            v->len = (uint32_t)n;
            v->flags = fl;
            v->present = 1;
        }
        return 0;
    case K_INT:
        if (scan_int(c, &v->i)) return -1;
        v->present = 1;
        return 0;
    case K_BOOL:
        if (ch == 't') {
            if (match_lit(c, "true", 4)) return -1;
            v->i = 1;
        } else {
            if (match_lit(c, "false", 5)) return -1;
            v->i = 0;
        }
        v->present = 1;
        return 0;
    case K_TS:
        if (ch == '"') {
            if (scan_string(c, &s, &n, &fl) || fl || parse_iso(s, n, &v->i)) return -1;
        } else {
            int64_t secs;
            if (scan_int(c, &secs) || secs < MIN_UNIX || secs > MAX_UNIX) return -1;
            v->i = secs * 1000000;
        }
        v->present = 1;
        return 0;
    case K_RAW:
    case K_RAW_DROP: {
        const uint8_t *start = c->p;
        if (skip_value(c, depth, 0)) return -1;
        if (f->kind == K_RAW) {
            if (c->p - start > UINT32_MAX) return -1;
            v->p = start;
            v->len = (uint32_t)(c->p - start);
            v->present = 1;
        }
        return 0;
    }
    case K_FREE_OBJ:
        if (ch != '{') return -1;
        v->present = 1;
        return read_free_object(c, r, depth);
    default:
        return -1;
    }
}

static int read_object(Cur *c, const Table *t, Rec *r, int depth);

static int read_sub(Cur *c, const Field *f, Rec *r, int depth) {
    skip_ws(c);
    if (c->p >= c->end) return -1;
    if (*c->p == 'n') {
        if (match_lit(c, "null", 4)) return -1;
        r->v[f->slot].present = 0;
        return 0;
    }
    if (*c->p != '{') return -1;
    r->v[f->slot].present = 1;
    return read_object(c, f->sub, r, depth + 1);
}

static inline int key_is(const Field *f, const uint8_t *key, size_t klen) {
    if (f->nlen != klen) return 0;
    for (size_t k = 0; k < klen; k++)
        if ((uint8_t)f->name[k] != key[k]) return 0;
    return 1;
}

/* An object of known fields (top level: unknown ones make the row a patch row). */
static int read_object(Cur *c, const Table *t, Rec *r, int depth) {
    if (depth > MAX_DEPTH) return -1;
    uint64_t seen = 0;
    uint8_t *follow = c->follow[t->id];
    int prev = -1;
    c->p++; /* '{' */
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        skip_ws(c);
        const uint8_t *key;
        size_t klen;
        uint8_t fl;
        if (c->p >= c->end || *c->p != '"' || scan_string(c, &key, &klen, &fl)) return -1;
        if (fl) return -1; /* an escaped key might spell a known one */
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        int idx = -1, guess = follow[prev + 1];
        if (guess < t->n && key_is(&t->fields[guess], key, klen)) {
            idx = guess;
        } else {
            for (int k = 0; k < t->n; k++) {
                if (key_is(&t->fields[k], key, klen)) {
                    idx = k;
                    break;
                }
            }
        }
        if (idx < 0) {
            if (t != &payment_table) return -1; /* nested shapes are strict */
            r->patch = 1;                       /* kept in extra by Python */
            if (skip_value(c, depth + 1, 1)) return -1;
        } else {
            if (seen & (1ull << idx)) return -1; /* a duplicate key */
            seen |= 1ull << idx;
            follow[prev + 1] = (uint8_t)idx;
            prev = idx;
            const Field *f = &t->fields[idx];
            if (f->kind == K_SUB) {
                if (read_sub(c, f, r, depth)) return -1;
            } else if (read_field(c, f, r, depth + 1)) {
                return -1;
            }
        }
        int sep = after_item(c, '}');
        if (sep <= 0) return sep;
    }
}

/* ------------------------------------------------------------------ output columns */

typedef struct {
    Buf offsets, data, valid;
} StrCol;

typedef struct {
    const Shape *shape;
    StrCol col[MAX_COLS]; /* (fixed-width columns use data and valid only) */
    StrCol extra;
    Buf patch; /* int64 (row, body, start, end) per patch row */
    size_t n;  /* rows written */
} Out;

static int str_push(StrCol *col, size_t row, const Val *v) {
    if (v->present) {
        if (v->flags & V_ESCAPED) {
            if (unescape_into(&col->data, v->p, v->len)) return -1;
        } else if (buf_put(&col->data, v->p, v->len)) {
            return -1;
        }
    }
    if (bit_put(&col->valid, row, v->present)) return -1;
    return buf_i64(&col->offsets, (int64_t)col->data.len);
}

/* The extra text of a record: its fields without a column, keys sorted, nulls and empty
 * objects left out (what payment_extras writes). Returns whether there was any. */
typedef struct {
    Buf *b;
    int first;
} Obj;

/* key: the key as JSON, quoted, with its colon (KEY() makes one) */
static int put_key_n(Obj *o, const char *key, size_t n) {
    if (!o->first && buf_byte(o->b, ',')) return -1;
    o->first = 0;
    return buf_put(o->b, key, n);
}
#define KEY(name) "\"" name "\":", sizeof(name) + 2
#define put_key(o, name) put_key_n(o, KEY(name))
#define put_str(o, name, v) put_str_n(o, KEY(name), v)
#define put_int(o, name, v) put_int_n(o, KEY(name), v)

static int put_str_n(Obj *o, const char *key, size_t kn, const Val *v) {
    if (!v->present) return 0;
    if (put_key_n(o, key, kn)) return -1;
    /* the string as sent, quotes included: its escapes are msgspec's own (else a patch row) */
    return buf_put(o->b, v->p - 1, (size_t)v->len + 2);
}

static int put_int_n(Obj *o, const char *key, size_t kn, const Val *v) {
    if (!v->present) return 0;
    if (put_key_n(o, key, kn)) return -1;
    char tmp[24];
    char *e = tmp + sizeof tmp, *q = e;
    /* |v| < 10^18 (scan_int), so the negation cannot overflow */
    uint64_t u = v->i < 0 ? (uint64_t)(-v->i) : (uint64_t)v->i;
    do {
        *--q = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v->i < 0) *--q = '-';
    return buf_put(o->b, q, (size_t)(e - q));
}

static int any_present(const Rec *r, const int *slots, int n) {
    for (int k = 0; k < n; k++)
        if (r->v[slots[k]].present) return 1;
    return 0;
}

static const int card_extra[] = {X_C_COUNTRY, X_C_EXP_MONTH, X_C_EXP_YEAR, X_C_FUNDING, X_C_LAST4};
static const int details_extra[] = {X_D_COUNTRY, X_D_EXP_MONTH, X_D_EXP_YEAR, X_D_FUNDING,
                                    X_D_LAST4};
static const int error_extra[] = {X_E_DOC_URL, X_E_MESSAGE, X_E_PARAM, X_E_TYPE};

static int put_card(Obj *o, const Rec *r, int country, int exp_month, int exp_year, int funding,
                    int last4) {
    if (put_str(o, "country", &r->v[country]) || put_int(o, "exp_month", &r->v[exp_month]) ||
        put_int(o, "exp_year", &r->v[exp_year]) || put_str(o, "funding", &r->v[funding]) ||
        put_str(o, "last4", &r->v[last4]))
        return -1;
    return 0;
}

static int write_extra(Buf *b, const Rec *r) {
    Obj o = {b, 1};
    const Val *v = r->v;
    if (buf_byte(b, '{')) return -1;
    if (put_int(&o, "amount_captured", &v[X_AMOUNT_CAPTURED]) ||
        put_str(&o, "cancel_url", &v[X_CANCEL_URL]) ||
        put_str(&o, "capture_method", &v[X_CAPTURE_METHOD]) ||
        put_str(&o, "failure_message", &v[X_FAILURE_MESSAGE]))
        return -1;
    if (v[P_ERROR].present && any_present(r, error_extra, 4)) {
        if (put_key(&o, "last_payment_error") || buf_byte(b, '{')) return -1;
        Obj e = {b, 1};
        if (put_str(&e, "doc_url", &v[X_E_DOC_URL]) || put_str(&e, "message", &v[X_E_MESSAGE]) ||
            put_str(&e, "param", &v[X_E_PARAM]) || put_str(&e, "type", &v[X_E_TYPE]) ||
            buf_byte(b, '}'))
            return -1;
    }
    if (v[P_NEXT_ACTION].present) { /* (an empty one too: it is not a partly mapped object) */
        if (put_key(&o, "next_action") || buf_byte(b, '{')) return -1;
        for (int k = 0; k < r->n_next; k++) {
            const Member *m = &r->next[k];
            if ((k && buf_byte(b, ',')) || buf_put(b, m->key - 1, (size_t)m->klen + 2) ||
                buf_byte(b, ':') || buf_put(b, m->value, m->vlen))
                return -1;
        }
        if (buf_byte(b, '}')) return -1;
    }
    if (v[P_DETAILS].present) {
        int card = v[P_CARD].present && any_present(r, card_extra, 5);
        if (card || any_present(r, details_extra, 5)) {
            if (put_key(&o, "payment_method_details") || buf_byte(b, '{')) return -1;
            Obj d = {b, 1};
            if (card) {
                if (put_key(&d, "card") || buf_byte(b, '{')) return -1;
                Obj cd = {b, 1};
                if (put_card(&cd, r, X_C_COUNTRY, X_C_EXP_MONTH, X_C_EXP_YEAR, X_C_FUNDING,
                             X_C_LAST4) ||
                    buf_byte(b, '}'))
                    return -1;
            }
            if (put_card(&d, r, X_D_COUNTRY, X_D_EXP_MONTH, X_D_EXP_YEAR, X_D_FUNDING,
                         X_D_LAST4) ||
                buf_byte(b, '}'))
                return -1;
        }
    }
    if (put_str(&o, "receipt_url", &v[X_RECEIPT_URL]) ||
        put_str(&o, "redirect_url", &v[X_REDIRECT_URL]) ||
        put_str(&o, "success_url", &v[X_SUCCESS_URL]))
        return -1;
    if (o.first) { /* nothing: a null extra */
        b->len--;
        return 0;
    }
    if (buf_byte(b, '}')) return -1;
    return 1;
}

/* Whether a string that extra copies as sent holds an escape msgspec writes otherwise. */
static int odd_extra(const Rec *r) {
    static const int slots[] = {X_CANCEL_URL, X_CAPTURE_METHOD, X_FAILURE_MESSAGE, X_RECEIPT_URL,
                                X_REDIRECT_URL, X_SUCCESS_URL, X_E_DOC_URL, X_E_MESSAGE,
                                X_E_PARAM, X_E_TYPE, X_D_COUNTRY, X_D_FUNDING, X_D_LAST4,
                                X_C_COUNTRY, X_C_FUNDING, X_C_LAST4};
    for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++) {
        const Val *v = &r->v[slots[k]];
        if (v->present && (v->flags & V_ODD_ESCAPE)) return 1;
    }
    return 0;
}

static int emit_row(Out *out, const Rec *r, int64_t body_index, const uint8_t *body) {
    size_t row = out->n;
    const Shape *shape = out->shape;
    for (int k = 0; k < shape->ncols; k++) {
        const Val *v = &r->v[shape->cols[k].slot];
        StrCol *col = &out->col[k];
        switch (shape->cols[k].kind) {
        case 's':
            if (str_push(col, row, v)) return -1;
            break;
        case 'i':
        case 't':
            if (buf_i64(&col->data, v->present ? v->i : 0) || bit_put(&col->valid, row, v->present))
                return -1;
            break;
        case 'b':
            if (bit_put(&col->data, row, v->present && v->i) ||
                bit_put(&col->valid, row, v->present))
                return -1;
            break;
        case 'p':
            if (bit_put(&col->data, row, v->present) || bit_put(&col->valid, row, 1)) return -1;
            break;
        default: /* 'r': metadata, "" when absent */
            if ((v->present && buf_put(&col->data, v->p, v->len)) || bit_put(&col->valid, row, 1) ||
                buf_i64(&col->offsets, (int64_t)col->data.len))
                return -1;
        }
    }
    if (shape->extra) {
        int patch = r->patch || odd_extra(r);
        int has = patch ? 0 : write_extra(&out->extra.data, r);
        if (has < 0 || bit_put(&out->extra.valid, row, has) ||
            buf_i64(&out->extra.offsets, (int64_t)out->extra.data.len))
            return -1;
        if (patch) {
            int64_t t[4] = {(int64_t)row, body_index, r->start - body, r->end - body};
            if (buf_put(&out->patch, t, sizeof t)) return -1;
        }
    }
    out->n++;
    return 0;
}

/* ------------------------------------------------------------------ bodies */

typedef struct {
    Rec *recs;
    size_t n, cap;
    Follow follow;
} Recs;

/* One list body -> its records; returns the variant ('A'/'B'), or 0 to refuse the body. */
static int read_body(const uint8_t *body, size_t len, const Table *table, Recs *rs, int *nomem) {
    Cur c = {body, body + len, rs->follow};
    int seen_data = 0, seen_meta = 0, seen_more = 0, seen_object = 0;
    int meta_object = 0, more_set = 0, object_list = 0;
    rs->n = 0;
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') return 0;
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') return 0; /* no data */
    for (;;) {
        skip_ws(&c);
        const uint8_t *key;
        size_t klen;
        uint8_t fl;
        if (c.p >= c.end || *c.p != '"' || scan_string(&c, &key, &klen, &fl) || fl) return 0;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':') return 0;
        c.p++;
        skip_ws(&c);
        if (c.p >= c.end) return 0;
        if (klen == 4 && memcmp(key, "data", 4) == 0) {
            if (seen_data++ || *c.p != '[') return 0;
            c.p++;
            skip_ws(&c);
            if (c.p < c.end && *c.p == ']') {
                c.p++;
            } else {
                for (;;) {
                    skip_ws(&c);
                    if (c.p >= c.end || *c.p != '{') return 0;
                    if (rs->n == rs->cap) {
                        size_t cap = rs->cap ? rs->cap * 2 : 128;
                        Rec *more = realloc(rs->recs, cap * sizeof(Rec));
                        if (!more) {
                            *nomem = 1;
                            return 0;
                        }
                        rs->recs = more;
                        rs->cap = cap;
                    }
                    Rec *r = &rs->recs[rs->n];
                    memset(r, 0, offsetof(Rec, next));
                    r->start = c.p;
                    if (read_object(&c, table, r, 2)) return 0;
                    r->end = c.p;
                    rs->n++;
                    int sep = after_item(&c, ']');
                    if (sep < 0) return 0;
                    if (sep == 0) break;
                }
            }
        } else if (klen == 4 && memcmp(key, "meta", 4) == 0) {
            if (seen_meta++) return 0;
            if (*c.p == '{') {
                meta_object = 1;
            } else if (*c.p != 'n') {
                return 0; /* neither an object nor null: not an envelope msgspec reads */
            }
            if (skip_value(&c, 1, 1)) return 0;
        } else if (klen == 8 && memcmp(key, "has_more", 8) == 0) {
            if (seen_more++) return 0;
            more_set = *c.p != 'n';
            if (skip_value(&c, 1, 1)) return 0;
        } else if (klen == 6 && memcmp(key, "object", 6) == 0) {
            if (seen_object++) return 0;
            const uint8_t *s = c.p;
            if (skip_value(&c, 1, 1)) return 0;
            object_list = c.p - s == 6 && memcmp(s, "\"list\"", 6) == 0;
        } else {
            if (skip_value(&c, 1, 0)) return 0;
        }
        int sep = after_item(&c, '}');
        if (sep < 0) return 0;
        if (sep == 0) break;
    }
    skip_ws(&c);
    if (c.p != c.end || !seen_data) return 0;
    if (meta_object) return 'A';
    if (more_set || object_list) return 'B';
    return 0;
}

/* ------------------------------------------------------------------ Python entry point */

static void out_free(Out *out) {
    for (int k = 0; k < MAX_COLS; k++) {
        free(out->col[k].offsets.data);
        free(out->col[k].data.data);
        free(out->col[k].valid.data);
    }
    free(out->extra.offsets.data);
    free(out->extra.data.data);
    free(out->extra.valid.data);
    free(out->patch.data);
}

/* A bitmap of exactly ceil(n / 8) bytes with zero padding bits. */
static int bits_finish(Buf *b, size_t n) {
    size_t need = (n + 7) / 8;
    if (need > b->len) {
        if (buf_reserve(b, need - b->len)) return -1;
        memset(b->data + b->len, 0, need - b->len);
    }
    b->len = need;
    if (n % 8) b->data[n / 8] &= (uint8_t)((1u << (n % 8)) - 1);
    return 0;
}

/* (kind, validity, offsets, data) of a string column; (kind, validity, data) of others. */
static PyObject *col_tuple(StrCol *col, char kind, size_t n) {
    if (kind == 'r') kind = 's';
    if (bits_finish(&col->valid, n) || ((kind == 'b' || kind == 'p') && bits_finish(&col->data, n)))
        return PyErr_NoMemory();
    PyObject *v = buffer_from(&col->valid);
    PyObject *o = v && kind == 's' ? buffer_from(&col->offsets) : NULL;
    PyObject *d = v && (o || kind != 's') ? buffer_from(&col->data) : NULL;
    if (!d) {
        Py_XDECREF(v);
        Py_XDECREF(o);
        return NULL;
    }
    if (kind == 's') return Py_BuildValue("(s#NNN)", &kind, (Py_ssize_t)1, v, o, d);
    return Py_BuildValue("(s#NN)", &kind, (Py_ssize_t)1, v, d);
}

PyDoc_STRVAR(scan_doc,
             "scan(resource, bodies) -> (variants, counts, n, columns, patch)\n\n"
             "resource: 'payments' or 'refunds'; bodies: a list of bytes.\n"
             "variants: bytes, per body b'A', b'B' or 0 (refused: read it another way);\n"
             "counts: int64 rows per body; n: rows; columns: {name: (kind, validity, ...buffers)}\n"
             "with kind 's' (validity, int64 offsets, data), 'i'/'t' (validity, int64 data),\n"
             "'b'/'p' (validity, bits); patch: int64 (row, body, start, end) of the rows whose\n"
             "extra (payments) Python must render from the record's text body[start:end].");

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    const char *resource;
    PyObject *arg;
    if (!PyArg_ParseTuple(args, "sO:scan", &resource, &arg)) return NULL;
    const Shape *shape = NULL;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        if (strcmp(shapes[k].resource, resource) == 0) shape = &shapes[k];
    if (!shape) {
        PyErr_Format(PyExc_ValueError, "scan reads 'payments' or 'refunds', not %.80s", resource);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "scan takes a sequence of bytes");
    if (!seq) return NULL;
    Py_ssize_t nb = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PyMem_Calloc((size_t)nb + 1, sizeof(PyObject *));
    const uint8_t **ptrs = PyMem_Calloc((size_t)nb + 1, sizeof(uint8_t *));
    size_t *lens = PyMem_Calloc((size_t)nb + 1, sizeof(size_t));
    PyObject *variants = PyBytes_FromStringAndSize(NULL, nb);
    Buf counts = {0};
    Out *out = calloc(1, sizeof(Out));
    Recs rs = {0};
    /* first guesses: the table's own order */
    for (int t = 0; t < N_TABLES; t++)
        for (int k = 0; k <= MAX_FIELDS; k++) rs.follow[t][k] = (uint8_t)k;
    PyObject *result = NULL;
    if (!items || !ptrs || !lens || !variants || !out) {
        PyErr_NoMemory();
        goto done;
    }
    out->shape = shape;
    for (Py_ssize_t i = 0; i < nb; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyBytes_Check(b)) {
            PyErr_Format(PyExc_TypeError, "scan takes bytes, not %.80s", Py_TYPE(b)->tp_name);
            goto done;
        }
        Py_INCREF(b); /* held while the GIL is released, whatever happens to the sequence */
        items[i] = b;
        ptrs[i] = (const uint8_t *)PyBytes_AS_STRING(b);
        lens[i] = (size_t)PyBytes_GET_SIZE(b);
    }
    char *var = PyBytes_AS_STRING(variants);
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (int k = 0; k < shape->ncols && !nomem; k++) nomem |= buf_i64(&out->col[k].offsets, 0);
    nomem |= buf_i64(&out->extra.offsets, 0);
    for (Py_ssize_t i = 0; i < nb && !nomem; i++) {
        int v = read_body(ptrs[i], lens[i], shape->table, &rs, &nomem);
        var[i] = (char)v;
        size_t before = out->n;
        if (v)
            for (size_t k = 0; k < rs.n && !nomem; k++)
                if (emit_row(out, &rs.recs[k], i, ptrs[i])) nomem = 1;
        if (buf_i64(&counts, (int64_t)(out->n - before))) nomem = 1;
    }
    Py_END_ALLOW_THREADS;
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    size_t n = out->n;
    PyObject *cols = PyDict_New();
    if (!cols) goto done;
    for (int k = 0; k <= shape->ncols; k++) {
        if (k == shape->ncols && !shape->extra) break;
        PyObject *t = k < shape->ncols ? col_tuple(&out->col[k], shape->cols[k].kind, n)
                                       : col_tuple(&out->extra, 's', n);
        const char *name = k < shape->ncols ? shape->cols[k].name : "extra";
        if (!t || PyDict_SetItemString(cols, name, t)) {
            Py_XDECREF(t);
            Py_DECREF(cols);
            goto done;
        }
        Py_DECREF(t);
    }
    PyObject *cnt = buffer_from(&counts);
    PyObject *patch = cnt ? buffer_from(&out->patch) : NULL;
    if (!patch) {
        Py_XDECREF(cnt);
        Py_DECREF(cols);
        goto done;
    }
    Py_INCREF(variants);
    result = Py_BuildValue("(NNnNN)", variants, cnt, (Py_ssize_t)n, cols, patch);
done:
    if (items)
        for (Py_ssize_t i = 0; i < nb; i++) Py_XDECREF(items[i]);
    PyMem_Free(items);
    PyMem_Free(ptrs);
    PyMem_Free(lens);
    Py_XDECREF(variants);
    Py_DECREF(seq);
    free(counts.data);
    if (out) {
        out_free(out);
        free(out);
    }
    free(rs.recs);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "gwtools._fastjson",
    "List bodies of payments or refunds -> Arrow column buffers (see _normalize._scan_tables).",
    -1,
    methods,
};

PyMODINIT_FUNC PyInit__fastjson(void) {
    if (PyType_Ready(&BufferType) < 0) return NULL;
    return PyModule_Create(&module);
}
