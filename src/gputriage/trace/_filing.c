/* Filing a chunk of decoded Kineto events into columns, in C: what `columns.append` does in Python for the events
 * msgspec decoded as Kineto's phases (`events.Complete` and its kin), a third of a large trace's read.
 *
 * file_chunk(events, codes, name_ids, names, shape_ids, shapes, never) reads each event's fields straight from its
 * struct's slots (msgspec structs keep their fields as member slots: the offsets are looked up once per type),
 * sorts the events by category, interns names and shapes exactly as `columns.append` does (same order, same keys)
 * and returns the columns' values packed as the arrays hold them:
 *
 *     (rest, flow_counts, gpu, calls, ops, least_call_ts, least_op_ts)
 *
 * rest: the events of the other categories, in order, for Python to read (`columns._rest`); flow_counts: a list of
 * (category index, count) in the order each category first appears; gpu, calls, ops: tuples of bytes, one per
 * column (`GPU_COLUMNS`, `CALL_COLUMNS`, `OP_COLUMNS` in filing.py). Anything the Python path would mend or
 * refuse (a null, a thread named rather than numbered, a number out of its column's range, an event of an
 * unexpected type) returns None before any column is touched: the caller files the chunk in Python. Names and
 * shapes interned before such a return stay interned; the Python path finds them, in the same order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

/* event fields, then argument fields */
enum { F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ARGS, N_EVENT_FIELDS };
enum { A_EXT, A_CORR, A_DEVICE, A_FLOPS, A_BPSM, A_DIMS, A_TYPES, N_ARG_FIELDS };
static const char *EVENT_FIELDS[N_EVENT_FIELDS] = {"cat", "name", "pid", "tid", "ts", "dur", "args"};
static const char *ARG_FIELDS[N_ARG_FIELDS] = {"external_id", "correlation", "device", "flops",
                                               "blocks_per_sm", "dims", "types"};

/* category codes, as filing.CODES gives them */
#define CODE_GPU_LAST 15 /* 0..15: a GPU activity of that kind */
#define CODE_OP 16
#define CODE_CALL 17
#define CODE_FLOW 32 /* 32 + k: the k-th flow category */
#define N_FLOWS 8
#define N_SEEN 8 /* categories remembered by address */

/* A struct type's slot offsets, -1 where it has no such member slot. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t off[8]; /* N_EVENT_FIELDS or N_ARG_FIELDS of them */
} Layout;

#define N_LAYOUTS 16
static Layout layouts[N_LAYOUTS];
static int n_layouts = 0;

static Py_ssize_t slot_offset(PyTypeObject *type, const char *field) {
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, field);
    if (descr == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX || member->type == T_OBJECT) off = member->offset;
    }
    Py_DECREF(descr);
    return off;
}

/* The layout of a type (looked up once), NULL where the cache is full. */
static Layout *layout_of(PyTypeObject *type, const char **fields, int n_fields) {
    for (int i = 0; i < n_layouts; i++)
        if (layouts[i].type == type) return &layouts[i];
    if (n_layouts == N_LAYOUTS) return NULL;
    Layout *l = &layouts[n_layouts];
    for (int f = 0; f < n_fields; f++) l->off[f] = slot_offset(type, fields[f]);
    Py_INCREF(type);
    l->type = type;
    n_layouts++;
    return l;
}

static inline PyObject *slot(PyObject *obj, Py_ssize_t off) {
    return off < 0 ? NULL : *(PyObject **)((char *)obj + off);
}

static int as_double(PyObject *v, double *out) {
    if (v == NULL || !PyFloat_CheckExact(v)) return -1;
    *out = PyFloat_AS_DOUBLE(v);
    return 0;
}

static int as_int64(PyObject *v, long long *out) {
    if (v == NULL || !PyLong_CheckExact(v)) return -1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = x;
    return 0;
}

/* A growable buffer of packed values. */
typedef struct {
    char *data;
    Py_ssize_t used, size;
} Buf;

static int buf_put(Buf *b, const void *value, Py_ssize_t n) {
    if (b->used + n > b->size) {
        Py_ssize_t size = b->size ? 2 * b->size : 4096;
        while (size < b->used + n) size *= 2;
        char *data = PyMem_Realloc(b->data, size);
        if (data == NULL) return -1;
        b->data = data;
        b->size = size;
    }
    memcpy(b->data + b->used, value, n);
    b->used += n;
    return 0;
}

/* The interned id of a name (added to names and name_ids where new), -1 on error. */
static long long intern_name(PyObject *name, PyObject *name_ids, PyObject *names) {
    if (name == NULL || !PyUnicode_CheckExact(name)) return -1;
    PyObject *id = PyDict_GetItemWithError(name_ids, name);
    if (id != NULL) return PyLong_AsLongLong(id);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(names);
    PyObject *new_id = PyLong_FromSsize_t(n);
    if (new_id == NULL) return -1;
    int failed = PyList_Append(names, name) < 0 || PyDict_SetItem(name_ids, name, new_id) < 0;
    Py_DECREF(new_id);
    return failed ? -1 : n;
}

/* An op's shapes interned as `columns._shape_ids` does: dims and types joined by a NUL, with the FLOPs the
 * profiler counted where there are some; 0 for an op that never launches GPU work. -1 on error. */
static long long intern_shape(PyObject *name, PyObject *dims, PyObject *types, PyObject *flops, PyObject *never,
                              PyObject *shape_ids, PyObject *shapes) {
    Py_buffer d, t;
    if (PyObject_GetBuffer(dims, &d, PyBUF_SIMPLE) < 0) return -1;
    if (d.len > 0) {
        int no = PySet_Contains(never, name);
        if (no != 0) {
            PyBuffer_Release(&d);
            return no < 0 ? -1 : 0;
        }
    }
    if (PyObject_GetBuffer(types, &t, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&d);
        return -1;
    }
    PyObject *joined = PyBytes_FromStringAndSize(NULL, d.len + 1 + t.len);
    if (joined != NULL) {
        char *p = PyBytes_AS_STRING(joined);
        memcpy(p, d.buf, d.len);
        p[d.len] = '\0';
        memcpy(p + d.len + 1, t.buf, t.len);
    }
    PyBuffer_Release(&d);
    PyBuffer_Release(&t);
    if (joined == NULL) return -1;
    long long result = -1;
    PyObject *key = PyFloat_AS_DOUBLE(flops) != 0.0 ? PyTuple_Pack(2, joined, flops) : Py_NewRef(joined);
    PyObject *id = key == NULL ? NULL : PyDict_GetItemWithError(shape_ids, key);
    if (id != NULL) {
        result = PyLong_AsLongLong(id);
    } else if (key != NULL && !PyErr_Occurred()) {
        PyObject *new_id = PyLong_FromSsize_t(PyList_GET_SIZE(shapes)), *entry = PyTuple_Pack(2, joined, flops);
        if (new_id != NULL && entry != NULL && PyDict_SetItem(shape_ids, key, new_id) == 0 &&
            PyList_Append(shapes, entry) == 0)
            result = PyList_GET_SIZE(shapes) - 1;
        Py_XDECREF(new_id);
        Py_XDECREF(entry);
    }
    Py_XDECREF(key);
    Py_DECREF(joined);
    return result;
}

/* Where an event's values are read from */
typedef struct {
    PyObject *event;
    Layout *ev;
    Layout *args; /* NULL: no arguments (each at its default) */
    PyObject *arg;
} Read;

enum { G_TS, G_DUR, G_NAME, G_KIND, G_DEV, G_CORR, G_EXT, G_BPSM, N_G };
/* a host event's columns: a call's (its id its correlation), an op's (its id its external id) then its shapes */
enum { H_TS, H_DUR, H_NAME, H_TID, H_ID, N_H };
enum { O_SHAPE = N_H, N_O };

static int read_args(Read *r) {
    PyObject *a = slot(r->event, r->ev->off[F_ARGS]);
    if (a == NULL) return -1;
    r->arg = a;
    if (a == Py_None) {
        r->args = NULL;
        return 0;
    }
    r->args = layout_of(Py_TYPE(a), ARG_FIELDS, N_ARG_FIELDS);
    return r->args == NULL ? -1 : 0;
}

static PyObject *arg(Read *r, int field) { return slot(r->arg, r->args->off[field]); }

static int arg_int64(Read *r, int field, long long *out) {
    if (r->args == NULL) {
        *out = -1;
        return 0;
    }
    return as_int64(arg(r, field), out);
}

/* A host event's columns (H_*): its start, duration, name, thread and the id argument `id_field`; the least start
 * kept. -1 where Python is to file it. */
static int file_host_event(Read *rd, int id_field, Buf *cols, PyObject *name_ids, PyObject *names, double *least) {
    double ts, dur;
    long long tid, id;
    if (as_double(slot(rd->event, rd->ev->off[F_TS]), &ts) < 0 ||
        as_double(slot(rd->event, rd->ev->off[F_DUR]), &dur) < 0 ||
        as_int64(slot(rd->event, rd->ev->off[F_TID]), &tid) < 0 || arg_int64(rd, id_field, &id) < 0)
        return -1;
    if (ts != ts) return -1; /* NaN: the least start is Python's `min`'s */
    long long name = intern_name(slot(rd->event, rd->ev->off[F_NAME]), name_ids, names);
    if (name < 0 || name > INT32_MAX) return -1;
    int name32 = (int)name;
    if (ts < *least) *least = ts;
    if (buf_put(&cols[H_TS], &ts, 8) || buf_put(&cols[H_DUR], &dur, 8) || buf_put(&cols[H_NAME], &name32, 4) ||
        buf_put(&cols[H_TID], &tid, 8) || buf_put(&cols[H_ID], &id, 8))
        return -1;
    return 0;
}

static PyObject *pack(Buf *bufs, int n) {
    PyObject *out = PyTuple_New(n);
    if (out == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(bufs[i].data ? bufs[i].data : "", bufs[i].used);
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, b);
    }
    return out;
}

static PyObject *file_chunk(PyObject *self, PyObject *args) {
    PyObject *events, *codes, *name_ids, *names, *shape_ids, *shapes, *never;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O:file_chunk", &PyList_Type, &events, &PyDict_Type, &codes,
                          &PyDict_Type, &name_ids, &PyList_Type, &names, &PyDict_Type, &shape_ids, &PyList_Type,
                          &shapes, &never))
        return NULL;
    if (!PyAnySet_Check(never)) {
        PyErr_SetString(PyExc_TypeError, "file_chunk: never must be a set");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(events);
    Buf g[N_G] = {{0}}, r[N_H] = {{0}}, o[N_O] = {{0}};
    Read *gpu = PyMem_Malloc(sizeof(Read) * (n ? n : 1));
    Read *calls = PyMem_Malloc(sizeof(Read) * (n ? n : 1));
    Read *ops = PyMem_Malloc(sizeof(Read) * (n ? n : 1));
    unsigned char *kinds = PyMem_Malloc(n ? n : 1);
    PyObject *rest = PyList_New(0), *out = NULL, *flow_counts = NULL;
    Py_ssize_t n_gpu = 0, n_calls = 0, n_ops = 0, flows[N_FLOWS] = {0};
    int flow_order[N_FLOWS], n_flow_kinds = 0;
    double least_call = INFINITY, least_op = INFINITY;
    PyObject *seen_cats[N_SEEN];
    long seen_codes[N_SEEN];
    int n_seen = 0;
    if (gpu == NULL || calls == NULL || ops == NULL || kinds == NULL || rest == NULL) goto bail;
    /* by category */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        Layout *ev = layout_of(Py_TYPE(e), EVENT_FIELDS, N_EVENT_FIELDS);
        if (ev == NULL) goto bail;
        PyObject *cat = slot(e, ev->off[F_CAT]);
        long code = -1;
        if (cat != NULL) {
            /* Kineto's categories decode as the very strings of a Literal: most are found by address */
            int k = 0;
            while (k < n_seen && seen_cats[k] != cat) k++;
            if (k < n_seen) {
                code = seen_codes[k];
            } else {
                PyObject *c = PyDict_GetItemWithError(codes, cat);
                if (c == NULL && PyErr_Occurred()) goto bail;
                code = c == NULL ? -1 : PyLong_AsLong(c);
                if (n_seen < N_SEEN) {
                    seen_cats[n_seen] = cat; /* borrowed: the event holds it for the call */
                    seen_codes[n_seen++] = code;
                }
            }
        } else if (ev->off[F_CAT] >= 0) {
            goto bail; /* an unset slot */
        }
        if (code < 0) { /* another category, or none (metadata): read in Python */
            if (PyList_Append(rest, e) < 0) goto bail;
            continue;
        }
        if (code >= CODE_FLOW) {
            int k = (int)(code - CODE_FLOW);
            if (k >= N_FLOWS) goto bail;
            if (flows[k]++ == 0) flow_order[n_flow_kinds++] = k;
            continue;
        }
        for (int f = F_NAME; f < N_EVENT_FIELDS; f++)
            if (ev->off[f] < 0) goto bail;
        Read rd = {e, ev, NULL, NULL};
        if (read_args(&rd) < 0) goto bail;
        if (code == CODE_OP) {
            ops[n_ops++] = rd;
        } else if (code == CODE_CALL) {
            calls[n_calls++] = rd;
        } else if (code <= CODE_GPU_LAST) {
            kinds[n_gpu] = (unsigned char)code;
            gpu[n_gpu++] = rd;
        } else {
            goto bail;
        }
    }
    /* GPU activities: their device from the arguments, else (where one has none) the process id */
    int any_without_device = 0;
    for (Py_ssize_t i = 0; i < n_gpu; i++) {
        long long dev;
        if (arg_int64(&gpu[i], A_DEVICE, &dev) < 0) goto bail;
        if (dev == -1) any_without_device = 1;
    }
    for (Py_ssize_t i = 0; i < n_gpu; i++) {
        Read *rd = &gpu[i];
        double ts, dur, bpsm = -1.0;
        long long corr, ext, dev;
        int dev32;
        if (as_double(slot(rd->event, rd->ev->off[F_TS]), &ts) < 0 ||
            as_double(slot(rd->event, rd->ev->off[F_DUR]), &dur) < 0 || arg_int64(rd, A_CORR, &corr) < 0 ||
            arg_int64(rd, A_EXT, &ext) < 0 || arg_int64(rd, A_DEVICE, &dev) < 0)
            goto bail;
        if (rd->args != NULL && as_double(arg(rd, A_BPSM), &bpsm) < 0) goto bail;
        if (any_without_device && dev < 0 && as_int64(slot(rd->event, rd->ev->off[F_PID]), &dev) < 0) goto bail;
        if (dev < INT32_MIN || dev > INT32_MAX) goto bail;
        dev32 = (int)dev;
        long long name = intern_name(slot(rd->event, rd->ev->off[F_NAME]), name_ids, names);
        if (name < 0 || name > INT32_MAX) goto bail;
        int name32 = (int)name;
        signed char kind = (signed char)kinds[i];
        float bpsm32 = bpsm > FLT_MAX ? INFINITY : bpsm < -FLT_MAX ? -INFINITY : (float)bpsm; /* as `array` does */
        if (buf_put(&g[G_TS], &ts, 8) || buf_put(&g[G_DUR], &dur, 8) || buf_put(&g[G_NAME], &name32, 4) ||
            buf_put(&g[G_KIND], &kind, 1) || buf_put(&g[G_DEV], &dev32, 4) || buf_put(&g[G_CORR], &corr, 8) ||
            buf_put(&g[G_EXT], &ext, 8) || buf_put(&g[G_BPSM], &bpsm32, 4))
            goto bail;
    }
    /* CUDA runtime and driver calls, then framework ops: every name interned before the shapes, as in Python */
    for (Py_ssize_t i = 0; i < n_calls; i++)
        if (file_host_event(&calls[i], A_CORR, r, name_ids, names, &least_call) < 0) goto bail;
    for (Py_ssize_t i = 0; i < n_ops; i++)
        if (file_host_event(&ops[i], A_EXT, o, name_ids, names, &least_op) < 0) goto bail;
    for (Py_ssize_t i = 0; i < n_ops; i++) {
        Read *rd = &ops[i];
        long long shape = 0;
        if (rd->args != NULL) {
            PyObject *flops = arg(rd, A_FLOPS), *dims = arg(rd, A_DIMS), *types = arg(rd, A_TYPES);
            if (flops == NULL || !PyFloat_CheckExact(flops) || dims == NULL || types == NULL) goto bail;
            shape = intern_shape(slot(rd->event, rd->ev->off[F_NAME]), dims, types, flops, never, shape_ids, shapes);
        } else {
            /* no arguments: as `columns._NO_ARGS`, empty dims and types, no FLOPs */
            PyObject *empty = PyBytes_FromStringAndSize("", 0), *zero = PyFloat_FromDouble(0.0);
            shape = empty && zero ? intern_shape(slot(rd->event, rd->ev->off[F_NAME]), empty, empty, zero, never,
                                                 shape_ids, shapes)
                                  : -1;
            Py_XDECREF(empty);
            Py_XDECREF(zero);
        }
        if (shape < 0 || shape > INT32_MAX) goto bail;
        int shape32 = (int)shape;
        if (buf_put(&o[O_SHAPE], &shape32, 4)) goto bail;
    }
    flow_counts = PyList_New(n_flow_kinds);
    if (flow_counts == NULL) goto bail;
    for (int k = 0; k < n_flow_kinds; k++) {
        PyObject *pair = Py_BuildValue("(in)", flow_order[k], flows[flow_order[k]]);
        if (pair == NULL) goto bail;
        PyList_SET_ITEM(flow_counts, k, pair);
    }
    PyObject *gpu_cols = pack(g, N_G), *call_cols = pack(r, N_H), *op_cols = pack(o, N_O);
    if (gpu_cols && call_cols && op_cols)
        out = Py_BuildValue("(OOOOOdd)", rest, flow_counts, gpu_cols, call_cols, op_cols, least_call, least_op);
    Py_XDECREF(gpu_cols);
    Py_XDECREF(call_cols);
    Py_XDECREF(op_cols);
    if (out != NULL) goto done;
bail: /* whatever went wrong (memory included), the Python path files the chunk (and meets it itself) */
    PyErr_Clear();
    out = Py_None;
    Py_INCREF(out);
done:
    for (int i = 0; i < N_G; i++) PyMem_Free(g[i].data);
    for (int i = 0; i < N_H; i++) PyMem_Free(r[i].data);
    for (int i = 0; i < N_O; i++) PyMem_Free(o[i].data);
    PyMem_Free(gpu);
    PyMem_Free(calls);
    PyMem_Free(ops);
    PyMem_Free(kinds);
    Py_XDECREF(rest);
    Py_XDECREF(flow_counts);
    return out;
}

static PyMethodDef methods[] = {
    {"file_chunk", file_chunk, METH_VARARGS,
     "file_chunk(events, codes, name_ids, names, shape_ids, shapes, never): a chunk's columns, or None (module "
     "doc of gputriage/trace/_filing.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gputriage.trace._filing",
    "Filing decoded Kineto events into columns, in C (columns.append's fast path).", -1, methods,
};

PyMODINIT_FUNC PyInit__filing(void) { return PyModule_Create(&module); }
