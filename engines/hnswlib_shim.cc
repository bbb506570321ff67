/* The C++ side of the hnswlib shim (see hnswlib_shim.h): spaces per metric, tags and the filter functor,
 * slot reuse on insert, save/load with a verifying sidecar, and the try/catch at every entry point.
 *
 * Slot reuse is done here with hnswlib's public members rather than addPoint(..., replace_deleted = true):
 * that call hands a new label whichever deleted slot comes first and erases the slot's old label from the
 * lookup table even when that label has meanwhile been inserted elsewhere. Deleting a set of ids and inserting
 * the same ids again (the churn phase) then leaves live rows the lookup cannot find: a later remove misses them
 * and a later insert duplicates them. Here an id that was removed gets its own slot back, and a new id's slot
 * only drops the old label if the lookup still points at that slot. */
#include "engines/hnswlib_shim.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

/* hnswlib's SSE path prefetches through the neighbour id one past the end of a full neighbour list: a read of
 * up to 3 bytes beyond an upper-layer list's allocation (harmless: the value only feeds a prefetch hint), which
 * AddressSanitizer reports. Sanitizer builds therefore use hnswlib's portable code, which has no prefetches. */
#if defined(__SANITIZE_ADDRESS__)
#define VB_HNSWLIB_PORTABLE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VB_HNSWLIB_PORTABLE 1
#endif
#endif
#if defined(VB_HNSWLIB_PORTABLE) && !defined(NO_MANUAL_VECTORIZATION)
#define NO_MANUAL_VECTORIZATION
#endif

#include <hnswlib/hnswlib.h>

#ifndef VB_HNSWLIB_VERSION
#define VB_HNSWLIB_VERSION "0.8.0"
#endif

namespace {

using Index = hnswlib::HierarchicalNSW<float>;
using hnswlib::labeltype;
using hnswlib::tableint;

/* Tag of a row loaded without one: no "tag < x" filter passes it; class of a row loaded without one. */
constexpr int32_t NO_TAG = VB_HNSW_NO_TAG;
constexpr int32_t NO_CLASS = VB_HNSW_NO_CLASS;

constexpr char META_MAGIC[8] = {'V', 'B', 'H', 'N', 'S', 'W', '0', '2'};
constexpr char META_MAGIC_V1[8] = {'V', 'B', 'H', 'N', 'S', 'W', '0', '1'};   /* tags only: rows without a class */

/* The sidecar header; tags (n_tags int32) follow it, then (META_MAGIC 02) as many classes. */
struct MetaHeader {
    char magic[8];
    uint32_t metric;
    uint32_t m;
    uint64_t dim;
    uint32_t ef_construction;
    uint32_t reserved;
    uint64_t index_file_bytes;
    uint64_t n_tags;
};

/* The caller's predicate over a row's id, tag and class (vb_hnsw_pass), as hnswlib's filter functor; labels
 * outside the tag array and rows loaded with neither a tag nor a class fail without asking it. Relaxed loads: tags
 * and classes are written before the row becomes visible and never change under a running search in vbench's
 * phases. */
class CallbackFilter : public hnswlib::BaseFilterFunctor {
 public:
    CallbackFilter(const std::atomic<int32_t> *tags, const std::atomic<int32_t> *classes, size_t n, vb_hnsw_pass pass,
                   void *arg)
        : tags_(tags), classes_(classes), n_(n), pass_(pass), arg_(arg) {}
    bool operator()(labeltype id) override {
        if (id >= n_) return false;
        int32_t tag = tags_[id].load(std::memory_order_relaxed), cls = classes_[id].load(std::memory_order_relaxed);
        return (tag != NO_TAG || cls != NO_CLASS) && pass_(arg_, (int64_t)id, tag, cls) != 0;
    }

 private:
    const std::atomic<int32_t> *tags_, *classes_;
    size_t n_;
    vb_hnsw_pass pass_;
    void *arg_;
};

int fail(vb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail(vb_error *err, const char *fmt, ...) {
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vb_error_set(err, "hnswlib", 1, "hnswlib: %s", msg);
}

/* The space for a metric: angular is inner product over vectors normalised by the shim. Caller owns it. */
hnswlib::SpaceInterface<float> *new_space(vb_metric metric, size_t dim) {
    if (metric == VB_METRIC_EUCLIDEAN) return new hnswlib::L2Space(dim);
    return new hnswlib::InnerProductSpace(dim);
}

bool metric_ok(vb_metric metric) {
    return metric == VB_METRIC_ANGULAR || metric == VB_METRIC_EUCLIDEAN || metric == VB_METRIC_DOT;
}

/* fsync a file or a directory by path; false on failure. */
bool sync_path(const std::string &path, bool dir) {
    int fd = open(path.c_str(), dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
    if (fd < 0) return false;
    bool ok = fsync(fd) == 0;
    close(fd);
    return ok;
}

std::string dir_of(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

long long file_size(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? (long long)st.st_size : -1;
}

}  // namespace

struct vb_hnsw {
    size_t dim = 0;
    vb_metric metric = VB_METRIC_EUCLIDEAN;
    int m = 0, ef_construction = 0;
    std::unique_ptr<hnswlib::SpaceInterface<float>> space;
    std::unique_ptr<Index> index;
    std::unique_ptr<std::atomic<int32_t>[]> tags;   /* indexed by label, n_tags entries, never resized */
    std::unique_ptr<std::atomic<int32_t>[]> classes;   /* the same, the row's class */
    size_t n_tags = 0;

    /* For angular, a unit-length copy of v in buf (a zero vector stays zero, as vb_distance treats it as
     * orthogonal to everything); for the other metrics v itself. */
    const float *prepare(const float *v, std::vector<float> &buf) const {
        if (metric != VB_METRIC_ANGULAR) return v;
        double s = 0.0;
        for (size_t i = 0; i < dim; i++) s += (double)v[i] * (double)v[i];
        buf.resize(dim);
        float inv = s > 0.0 ? (float)(1.0 / std::sqrt(s)) : 0.0f;
        for (size_t i = 0; i < dim; i++) buf[i] = v[i] * inv;
        return buf.data();
    }

    void alloc_tags(size_t n) {
        tags.reset(new std::atomic<int32_t>[n]);
        classes.reset(new std::atomic<int32_t>[n]);
        n_tags = n;
        for (size_t i = 0; i < n; i++) {
            tags[i].store(NO_TAG, std::memory_order_relaxed);
            classes[i].store(NO_CLASS, std::memory_order_relaxed);
        }
    }

    void add_one(labeltype label, const float *vec, int32_t tag, int32_t cls);
    bool remove_one(labeltype label);
};

/* One row, under the label's lock (hnswlib's label lock table), so two threads never work on one id. */
void vb_hnsw::add_one(labeltype label, const float *vec, int32_t tag, int32_t cls) {
    thread_local std::vector<float> buf;
    const float *v = prepare(vec, buf);
    Index &ix = *index;
    std::unique_lock<std::mutex> lock_label(ix.getLabelOpMutex(label));
    tags[label].store(tag, std::memory_order_relaxed);
    classes[label].store(cls, std::memory_order_relaxed);

    /* Present: a live row is updated in place; a removed one takes its own slot back if no new id took it. */
    tableint slot = 0;
    bool present = false;
    {
        std::unique_lock<std::mutex> lock_table(ix.label_lookup_lock);
        auto it = ix.label_lookup_.find(label);
        if (it != ix.label_lookup_.end()) {
            present = true;
            slot = it->second;
        }
    }
    if (present && !ix.isMarkedDeleted(slot)) {
        ix.addPoint(v, label, -1);   /* hnswlib's update path for an existing live label */
        return;
    }
    if (present) {
        bool claimed;
        {
            std::unique_lock<std::mutex> lock_deleted(ix.deleted_elements_lock);
            claimed = ix.deleted_elements.erase(slot) == 1;
        }
        if (claimed) {
            ix.unmarkDeletedInternal(slot);
            ix.updatePoint(v, slot, 1.0);
            return;
        }
        /* Another id took the slot; its insert drops our stale lookup entry. Continue as a new id. */
    }

    /* New id: a free deleted slot if any, else a new slot. */
    bool vacant = false;
    {
        std::unique_lock<std::mutex> lock_deleted(ix.deleted_elements_lock);
        if (!ix.deleted_elements.empty()) {
            slot = *ix.deleted_elements.begin();
            ix.deleted_elements.erase(ix.deleted_elements.begin());
            vacant = true;
        }
    }
    if (!vacant) {
        ix.addPoint(v, label, -1);
        return;
    }
    {
        std::unique_lock<std::mutex> lock_table(ix.label_lookup_lock);
        labeltype old = ix.getExternalLabel(slot);
        auto it = ix.label_lookup_.find(old);
        if (it != ix.label_lookup_.end() && it->second == slot) ix.label_lookup_.erase(it);
        ix.setExternalLabel(slot, label);
        ix.label_lookup_[label] = slot;
    }
    ix.unmarkDeletedInternal(slot);
    ix.updatePoint(v, slot, 1.0);
}

/* Marks a live row deleted; false when the id is absent or already deleted. */
bool vb_hnsw::remove_one(labeltype label) {
    Index &ix = *index;
    std::unique_lock<std::mutex> lock_label(ix.getLabelOpMutex(label));
    tableint slot;
    {
        std::unique_lock<std::mutex> lock_table(ix.label_lookup_lock);
        auto it = ix.label_lookup_.find(label);
        if (it == ix.label_lookup_.end()) return false;
        slot = it->second;
    }
    if (ix.isMarkedDeleted(slot)) return false;
    ix.markDeletedInternal(slot);
    return true;
}

extern "C" {

const char *vb_hnsw_version(void) { return VB_HNSWLIB_VERSION; }

int vb_hnsw_create(size_t dim, vb_metric metric, size_t capacity, int m, int ef_construction, vb_hnsw **out,
                   vb_error *err) {
    *out = nullptr;
    if (dim == 0 || !metric_ok(metric) || capacity == 0 || m < 2 || ef_construction < 1)
        return fail(err, "bad index spec: dim %zu, metric %d, capacity %zu, m %d, ef_construction %d", dim,
                    (int)metric, capacity, m, ef_construction);
    try {
        std::unique_ptr<vb_hnsw> h(new vb_hnsw);
        h->dim = dim;
        h->metric = metric;
        h->m = m;
        h->ef_construction = ef_construction;
        h->space.reset(new_space(metric, dim));
        h->index.reset(new Index(h->space.get(), capacity, (size_t)m, (size_t)ef_construction, 100, true));
        h->index->setEf(1);   /* ef comes with each search (vb_hnsw_search), never from the index */
        h->alloc_tags(capacity);
        *out = h.release();
        return VB_OK;
    } catch (const std::exception &e) {
        return fail(err, "creating an index of %zu x %zu: %s", capacity, dim, e.what());
    } catch (...) {
        return fail(err, "creating an index of %zu x %zu: unknown exception", capacity, dim);
    }
}

void vb_hnsw_destroy(vb_hnsw **h) {
    if (!h || !*h) return;
    delete *h;
    *h = nullptr;
}

int vb_hnsw_add(vb_hnsw *h, const int64_t *ids, const float *vecs, const int32_t *tags, const int32_t *classes,
                size_t n, int threads, vb_error *err) {
    /* Ids are checked up front so a bad batch changes nothing. */
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (uint64_t)ids[i] >= h->n_tags)
            return fail(err, "id %lld is outside [0, %zu): ids index the tag array, sized by the table capacity",
                        (long long)ids[i], h->n_tags);
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex first_lock;
    std::string first;
    const size_t chunk = 64;
    auto work = [&]() {
        size_t i = 0;
        try {
            for (;;) {
                size_t start = next.fetch_add(chunk);
                if (start >= n || failed.load(std::memory_order_relaxed)) return;
                size_t end = start + chunk < n ? start + chunk : n;
                for (i = start; i < end; i++)
                    h->add_one((labeltype)ids[i], vecs + i * h->dim, tags ? tags[i] : NO_TAG,
                               classes ? classes[i] : NO_CLASS);
            }
        } catch (const std::exception &e) {
            std::lock_guard<std::mutex> g(first_lock);
            if (first.empty()) first = "adding id " + std::to_string(ids[i]) + ": " + e.what();
        } catch (...) {
            std::lock_guard<std::mutex> g(first_lock);
            if (first.empty()) first = "adding id " + std::to_string(ids[i]) + ": unknown exception";
        }
        failed = true;
    };
    size_t nthreads = threads > 1 ? (size_t)threads : 1;
    if (nthreads > (n + chunk - 1) / chunk) nthreads = (n + chunk - 1) / chunk;
    std::vector<std::thread> pool;
    try {
        for (size_t t = 1; t < nthreads; t++) pool.emplace_back(work);
    } catch (...) {
        /* A thread that cannot start only means fewer workers: the ones running take its share. */
    }
    work();
    for (auto &t : pool) t.join();
    if (failed && !first.empty())
        return fail(err, "%s (capacity %zu, %zu rows in use)", first.c_str(), h->index->getMaxElements(),
                    h->index->getCurrentElementCount() - h->index->getDeletedCount());
    return VB_OK;
}

int vb_hnsw_remove(vb_hnsw *h, const int64_t *ids, size_t n, size_t *removed, vb_error *err) {
    size_t count = 0;
    size_t i = 0;
    try {
        for (; i < n; i++)
            if (ids[i] >= 0 && h->remove_one((labeltype)ids[i])) count++;
    } catch (const std::exception &e) {
        if (removed) *removed = count;
        return fail(err, "removing id %lld: %s", (long long)ids[i], e.what());
    }
    if (removed) *removed = count;
    return VB_OK;
}

/* The lookup table names every label with its slot (a removed id keeps its entry, its slot marked deleted); it is
 * copied under its lock and the rows are read after, in slot order. */
int vb_hnsw_rows(vb_hnsw *h, vb_hnsw_row_fn fn, void *arg, vb_error *err) {
    try {
        Index &ix = *h->index;
        std::vector<std::pair<tableint, labeltype>> live;
        {
            std::unique_lock<std::mutex> lock_table(ix.label_lookup_lock);
            live.reserve(ix.label_lookup_.size());
            for (const auto &e : ix.label_lookup_) live.emplace_back(e.second, e.first);
        }
        std::sort(live.begin(), live.end());
        for (const auto &e : live) {
            if (ix.isMarkedDeleted(e.first)) continue;
            if (fn(arg, (int64_t)e.second, reinterpret_cast<const float *>(ix.getDataByInternalId(e.first))))
                return fail(err, "the listing of the rows was stopped at id %lld", (long long)e.second);
        }
    } catch (const std::exception &e) {
        return fail(err, "listing the rows: %s", e.what());
    }
    return VB_OK;
}

/* hnswlib reads ef from the index (searchKnn walks the base layer with max(ef_, k) candidates). The index's
 * ef_ stays 1, so asking searchKnn for max(ef, k) results walks with exactly the width this caller wants; the
 * farthest are then dropped down to k. Nothing shared is written, so each connection keeps its own ef. */
int vb_hnsw_search(vb_hnsw *h, const float *query, int k, int ef, vb_hnsw_pass pass, void *pass_arg,
                   int64_t *ids_out, int *n_out, vb_error *err) {
    *n_out = 0;
    if (k <= 0) return VB_OK;
    size_t width = (size_t)(ef > k ? ef : k);
    try {
        thread_local std::vector<float> buf;
        const float *q = h->prepare(query, buf);
        std::priority_queue<std::pair<float, labeltype>> r;
        if (pass) {
            CallbackFilter f(h->tags.get(), h->classes.get(), h->n_tags, pass, pass_arg);
            r = h->index->searchKnn(q, width, &f);
        } else {
            r = h->index->searchKnn(q, width);
        }
        while (r.size() > (size_t)k) r.pop();   /* farthest first */
        int got = (int)r.size();   /* farthest first: fill from the back */
        for (int i = got - 1; i >= 0; i--) {
            ids_out[i] = (int64_t)r.top().second;
            r.pop();
        }
        *n_out = got;
        return VB_OK;
    } catch (const std::exception &e) {
        return fail(err, "search: %s", e.what());
    } catch (...) {
        return fail(err, "search: unknown exception");
    }
}

int vb_hnsw_save(vb_hnsw *h, const char *index_path, const char *meta_path, vb_error *err) {
    std::string index_tmp = std::string(index_path) + ".tmp", meta_tmp = std::string(meta_path) + ".tmp";
    try {
        h->index->saveIndex(index_tmp);   /* hnswlib does not check its stream: the size check below does */
        long long want = (long long)h->index->indexFileSize(), got = file_size(index_tmp);
        if (got != want) {
            unlink(index_tmp.c_str());
            return fail(err, "saving %s: wrote %lld bytes of %lld (disk full or not writable?)", index_tmp.c_str(),
                        got, want);
        }
        if (!sync_path(index_tmp, false)) {
            int e = errno;
            unlink(index_tmp.c_str());
            return fail(err, "syncing %s: %s", index_tmp.c_str(), strerror(e));
        }
        MetaHeader mh;
        memset(&mh, 0, sizeof mh);
        memcpy(mh.magic, META_MAGIC, sizeof mh.magic);
        mh.metric = (uint32_t)h->metric;
        mh.m = (uint32_t)h->m;
        mh.dim = h->dim;
        mh.ef_construction = (uint32_t)h->ef_construction;
        mh.index_file_bytes = (uint64_t)want;
        mh.n_tags = h->n_tags;
        std::vector<int32_t> tags(h->n_tags);
        std::vector<int32_t> classes(h->n_tags);
        for (size_t i = 0; i < h->n_tags; i++) tags[i] = h->tags[i].load(std::memory_order_relaxed);
        for (size_t i = 0; i < h->n_tags; i++) classes[i] = h->classes[i].load(std::memory_order_relaxed);
        FILE *f = fopen(meta_tmp.c_str(), "wb");
        bool ok = f && fwrite(&mh, sizeof mh, 1, f) == 1 &&
                  (tags.empty() || fwrite(tags.data(), sizeof(int32_t), tags.size(), f) == tags.size()) &&
                  (classes.empty() || fwrite(classes.data(), sizeof(int32_t), classes.size(), f) == classes.size()) &&
                  fflush(f) == 0 && fsync(fileno(f)) == 0;
        int e = errno;
        if (f && fclose(f) != 0 && ok) {
            ok = false;
            e = errno;
        }
        if (!ok) {
            unlink(index_tmp.c_str());
            unlink(meta_tmp.c_str());
            return fail(err, "writing %s: %s", meta_tmp.c_str(), strerror(e));
        }
        /* Old sidecar first: from here until the last rename, open sees no sidecar and reports found = 0. */
        if ((unlink(meta_path) != 0 && errno != ENOENT) || rename(index_tmp.c_str(), index_path) != 0 ||
            rename(meta_tmp.c_str(), meta_path) != 0) {
            e = errno;
            unlink(index_tmp.c_str());
            unlink(meta_tmp.c_str());
            return fail(err, "installing %s and %s: %s", index_path, meta_path, strerror(e));
        }
        sync_path(dir_of(meta_path), true);
        return VB_OK;
    } catch (const std::exception &e) {
        unlink(index_tmp.c_str());
        return fail(err, "saving %s: %s", index_path, e.what());
    }
}

int vb_hnsw_open(const char *index_path, const char *meta_path, size_t dim, vb_metric metric, size_t capacity,
                 int m, int ef_construction, vb_hnsw **out, int *found, vb_error *err) {
    *out = nullptr;
    *found = 0;
    if (access(index_path, F_OK) != 0 || access(meta_path, F_OK) != 0) return VB_OK;
    FILE *f = fopen(meta_path, "rb");
    if (!f) return fail(err, "opening %s: %s", meta_path, strerror(errno));
    MetaHeader mh;
    bool v1 = false;
    if (fread(&mh, sizeof mh, 1, f) != 1 ||
        (memcmp(mh.magic, META_MAGIC, sizeof mh.magic) != 0 &&
         !(v1 = memcmp(mh.magic, META_MAGIC_V1, sizeof mh.magic) == 0))) {
        fclose(f);
        return fail(err, "%s is not a vbench hnswlib sidecar (or is truncated)", meta_path);
    }
    if (mh.dim != dim || mh.metric != (uint32_t)metric || mh.m != (uint32_t)m ||
        mh.ef_construction != (uint32_t)ef_construction) {
        fclose(f);   /* another table's index: not ours to reuse */
        return VB_OK;
    }
    long long size = file_size(index_path);
    if (size < 0 || (uint64_t)size != mh.index_file_bytes) {
        fclose(f);
        return fail(err, "%s has %lld bytes, its sidecar %s says %llu: the index was not saved completely",
                    index_path, size, meta_path, (unsigned long long)mh.index_file_bytes);
    }
    try {
        std::vector<int32_t> saved(mh.n_tags), saved_classes(v1 ? 0 : mh.n_tags);
        bool ok = saved.empty() || fread(saved.data(), sizeof(int32_t), saved.size(), f) == saved.size();
        ok = ok && (saved_classes.empty() ||
                    fread(saved_classes.data(), sizeof(int32_t), saved_classes.size(), f) == saved_classes.size());
        fclose(f);
        f = nullptr;
        if (!ok)
            return fail(err, "%s: truncated tag or class array (%llu each expected)", meta_path,
                        (unsigned long long)mh.n_tags);
        std::unique_ptr<vb_hnsw> h(new vb_hnsw);
        h->dim = dim;
        h->metric = metric;
        h->m = m;
        h->ef_construction = ef_construction;
        h->space.reset(new_space(metric, dim));
        h->index.reset(new Index(h->space.get(), index_path, false, capacity, true));
        h->index->setEf(1);   /* ef comes with each search (vb_hnsw_search), never from the index */
        if (h->index->data_size_ != dim * sizeof(float) || h->index->M_ != (size_t)m)
            return fail(err, "%s holds vectors of %zu bytes and M %zu, its sidecar says dim %zu and M %d", index_path,
                        h->index->data_size_, h->index->M_, dim, m);
        size_t n_tags = h->index->getMaxElements() > mh.n_tags ? h->index->getMaxElements() : (size_t)mh.n_tags;
        h->alloc_tags(n_tags);
        for (size_t i = 0; i < saved.size(); i++) h->tags[i].store(saved[i], std::memory_order_relaxed);
        for (size_t i = 0; i < saved_classes.size(); i++)
            h->classes[i].store(saved_classes[i], std::memory_order_relaxed);
        *out = h.release();
        *found = 1;
        return VB_OK;
    } catch (const std::exception &e) {
        if (f) fclose(f);
        return fail(err, "loading %s: %s", index_path, e.what());
    }
}

void vb_hnsw_get_stats(vb_hnsw *h, vb_hnsw_stats *out) {
    Index &ix = *h->index;
    size_t count = ix.getCurrentElementCount(), deleted = ix.getDeletedCount();
    size_t upper = 0;
    for (size_t i = 0; i < count; i++)
        if (ix.element_levels_[i] > 0) upper += ix.size_links_per_element_ * (size_t)ix.element_levels_[i];
    size_t lookup;
    {
        std::unique_lock<std::mutex> lock_table(ix.label_lookup_lock);
        lookup = ix.label_lookup_.size() * (sizeof(std::pair<const labeltype, tableint>) + 2 * sizeof(void *)) +
                 ix.label_lookup_.bucket_count() * sizeof(void *);
    }
    size_t per_slot = ix.size_data_per_element_ + sizeof(char *) + sizeof(int) + sizeof(std::mutex) +
                      sizeof(hnswlib::vl_type);
    out->rows = count - deleted;
    out->deleted = deleted;
    out->capacity = ix.getMaxElements();
    out->file_bytes = ix.indexFileSize();
    out->memory_bytes = ix.getMaxElements() * per_slot + upper + lookup + h->n_tags * 2 * sizeof(int32_t);
    out->vector_bytes = out->rows * h->dim * sizeof(float);
}

}  // extern "C"
