/*
 * CUDA graphs in kscope op's CUDA backend.  A graph launch runs the
 * graph's kernels inside the driver, never through cuLaunchKernel, so
 * the launch filters would never see them.  kscope keeps its own copy
 * of every graph the program instantiates (cuGraphClone at
 * instantiation: the executable graph is a snapshot of the graph then),
 * and at each launch of the executable graph asks the filters about its
 * kernel nodes, in an order the graph's edges allow (cuda_gorder.c):
 *
 *   nothing collected  the graph is launched as it is (the common case,
 *                      and what a program pays with nothing matching);
 *   otherwise          the graph's nodes run one by one on the launch's
 *                      stream in that order: kernels through the
 *                      backend's launch path (replayed where collected),
 *                      copies, memsets, host functions, event records
 *                      and waits as the nodes say, child graphs inline.
 *                      That is the graph's work serialized, so the
 *                      program's results are the same.
 *
 * Graphs holding nodes kscope does not run itself (memory allocation and
 * free, external semaphores, batched memory operations, conditional
 * nodes, kernels launched in clusters) and executable graphs changed
 * after instantiation (cuGraphExec*Set*, cuGraphNodeSetEnabled; after
 * cuGraphExecUpdate kscope copies the new graph) are launched as they
 * are, and counted: the run ends with a warning that says how many and
 * why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

#define R ks_cu_real

/* Child graphs inside child graphs: deeper than this is not expanded. */
#define MAX_DEPTH 8

enum node_op { OP_KERNEL, OP_COPY, OP_MEMSET, OP_HOST, OP_RECORD, OP_WAIT };

struct node {
	enum node_op op;
	union {
		struct ks_cu_launch kernel;   /* stream and ptsz set per launch */
		CUDA_MEMCPY3D copy;
		CUDA_MEMSET_NODE_PARAMS memset;
		CUDA_HOST_NODE_PARAMS host;
		CUevent event;
	} u;
};

/* An executable graph the program instantiated. */
struct gexec {
	CUgraphExec exec;
	CUgraph copy;                     /* kscope's clone of its graph */
	bool changed;                     /* set-params or update since */
	int plan;                         /* 0 not made, 1 made, -1 cannot */
	char why[160];                    /* plan -1: why */
	size_t n, nkernels;
	struct node *nodes;               /* in running order */
	struct gexec *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The node types kscope does not run itself, by what they do; NULL for
 * the others. */
static const char *foreign(CUgraphNodeType t)
{
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
	case CU_GRAPH_NODE_TYPE_MEMCPY:
	case CU_GRAPH_NODE_TYPE_MEMSET:
	case CU_GRAPH_NODE_TYPE_HOST:
	case CU_GRAPH_NODE_TYPE_GRAPH:
	case CU_GRAPH_NODE_TYPE_EMPTY:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return NULL;
	case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
		return "a memory allocation";
	case CU_GRAPH_NODE_TYPE_MEM_FREE:
		return "a memory free";
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
	case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
		return "an external semaphore";
	case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
		return "a batched memory operation";
	case CU_GRAPH_NODE_TYPE_CONDITIONAL:
		return "a conditional";
	default:
		return "an unknown type of";
	}
}

/* The first node of graph (child graphs included) that kscope does not
 * run itself, as foreign() names it; NULL when none or not known. */
static const char *foreign_node(CUgraph graph, int depth)
{
	CUgraphNode *nodes;
	const char *what = NULL;
	size_t n = 0;

	if (depth > MAX_DEPTH || !R.cuGraphGetNodes || !R.cuGraphNodeGetType ||
	    R.cuGraphGetNodes(graph, NULL, &n) != CUDA_SUCCESS ||
	    !(nodes = calloc(n + 1, sizeof(*nodes))))
		return NULL;
	if (R.cuGraphGetNodes(graph, nodes, &n) == CUDA_SUCCESS) {
		for (size_t i = 0; i < n && !what; i++) {
			CUgraphNodeType t;
			CUgraph child;

			if (R.cuGraphNodeGetType(nodes[i], &t) != CUDA_SUCCESS)
				continue;
			what = foreign(t);
			if (!what && t == CU_GRAPH_NODE_TYPE_GRAPH && R.cuGraphChildGraphNodeGetGraph &&
			    R.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS)
				what = foreign_node(child, depth + 1);
		}
	}
	free(nodes);
	return what;
}
static struct gexec *execs;

atomic_ulong ks_cu_graph_launches, ks_cu_graph_unseen;
static char unseen_why[200];

static struct gexec **find(CUgraphExec e)
{
	struct gexec **p = &execs;

	while (*p && (*p)->exec != e)
		p = &(*p)->next;
	return p;
}

static void gexec_free(struct gexec *g)
{
	if (g->copy && R.cuGraphDestroy)
		R.cuGraphDestroy(g->copy);
	free(g->nodes);
	free(g);
}

void ks_cu_graph_instantiated(CUgraphExec exec, CUgraph graph)
{
	struct gexec *g, **p;
	CUgraph copy = NULL;
	CUresult r;

	if (!R.cuGraphClone || !R.cuGraphDestroy)
		return;
	if ((r = R.cuGraphClone(&copy, graph)) != CUDA_SUCCESS)
		copy = NULL;
	g = calloc(1, sizeof(*g));
	if (!g) {
		if (copy)
			R.cuGraphDestroy(copy);
		return;
	}
	g->exec = exec;
	g->copy = copy;
	if (!copy) {
		/* The driver clones no graph that allocates or frees memory. */
		const char *what = foreign_node(graph, 0);

		g->plan = -1;
		if (what)
			snprintf(g->why, sizeof(g->why), "the graph has %s node, which kscope "
				 "does not run itself", what);
		else
			snprintf(g->why, sizeof(g->why), "kscope could not copy the graph "
				 "(cuGraphClone: %s)", ks_cu_status_name(r));
	}
	pthread_mutex_lock(&lock);
	p = find(exec);
	if (*p) {                         /* a handle the driver reused */
		struct gexec *old = *p;

		*p = old->next;
		gexec_free(old);
	}
	g->next = execs;
	execs = g;
	pthread_mutex_unlock(&lock);
}

void ks_cu_graph_destroyed(CUgraphExec exec)
{
	struct gexec *g = NULL, **p;

	pthread_mutex_lock(&lock);
	p = find(exec);
	if (*p) {
		g = *p;
		*p = g->next;
	}
	pthread_mutex_unlock(&lock);
	if (g)
		gexec_free(g);
}

void ks_cu_graph_changed(CUgraphExec exec)
{
	struct gexec **p;

	pthread_mutex_lock(&lock);
	p = find(exec);
	if (*p)
		(*p)->changed = true;
	pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------------ */
/* The plan: the nodes in running order                                */
/* ------------------------------------------------------------------ */

struct plan {
	struct node *v;
	size_t n, cap, nkernels;
	char *why;
	size_t why_size;
};

static int fail(struct plan *pl, const char *what, CUresult r)
{
	if (r != CUDA_SUCCESS)
		snprintf(pl->why, pl->why_size, "%s failed (%s)", what, ks_cu_status_name(r));
	else
		snprintf(pl->why, pl->why_size, "%s", what);
	return -1;
}

static struct node *add(struct plan *pl)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? 2 * pl->cap : 16;
		struct node *v = realloc(pl->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		pl->v = v;
		pl->cap = cap;
	}
	memset(&pl->v[pl->n], 0, sizeof(pl->v[0]));
	return &pl->v[pl->n++];
}

static int plan_node(struct plan *pl, CUgraphNode node, int depth);

/* Appends graph's nodes in running order. */
static int plan_graph(struct plan *pl, CUgraph graph, int depth)
{
	CUgraphNode *nodes = NULL, *from = NULL, *to = NULL;
	size_t n = 0, m = 0, *order = NULL, *fi = NULL, *ti = NULL;
	CUresult r;
	int rc = -1;

	if (depth > MAX_DEPTH)
		return fail(pl, "child graphs nested too deep", CUDA_SUCCESS);
	if ((r = R.cuGraphGetNodes(graph, NULL, &n)) != CUDA_SUCCESS)
		return fail(pl, "cuGraphGetNodes", r);
	if ((r = R.cuGraphGetEdges_v2(graph, NULL, NULL, NULL, &m)) != CUDA_SUCCESS)
		return fail(pl, "cuGraphGetEdges", r);
	nodes = calloc(n + 1, sizeof(*nodes));
	from = calloc(m + 1, sizeof(*from));
	to = calloc(m + 1, sizeof(*to));
	fi = calloc(m + 1, sizeof(*fi));
	ti = calloc(m + 1, sizeof(*ti));
	order = calloc(n + 1, sizeof(*order));
	if (!nodes || !from || !to || !fi || !ti || !order) {
		fail(pl, "out of memory", CUDA_SUCCESS);
		goto out;
	}
	if ((r = R.cuGraphGetNodes(graph, nodes, &n)) != CUDA_SUCCESS) {
		fail(pl, "cuGraphGetNodes", r);
		goto out;
	}
	if (m && (r = R.cuGraphGetEdges_v2(graph, from, to, NULL, &m)) != CUDA_SUCCESS) {
		fail(pl, "cuGraphGetEdges", r);
		goto out;
	}
	for (size_t e = 0; e < m; e++) {
		fi[e] = ti[e] = n;
		for (size_t i = 0; i < n; i++) {
			if (nodes[i] == from[e])
				fi[e] = i;
			if (nodes[i] == to[e])
				ti[e] = i;
		}
	}
	if (ks_cu_graph_order(n, fi, ti, m, order) != 0) {
		fail(pl, "the graph's edges could not be ordered", CUDA_SUCCESS);
		goto out;
	}
	rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = plan_node(pl, nodes[order[i]], depth);
out:
	free(nodes);
	free(from);
	free(to);
	free(fi);
	free(ti);
	free(order);
	return rc;
}

static int plan_kernel(struct plan *pl, CUgraphNode node)
{
	CUDA_KERNEL_NODE_PARAMS p;
	CUlaunchAttributeValue v;
	struct node *x;
	bool coop = false;
	CUresult r;

	memset(&p, 0, sizeof(p));
	if ((r = R.cuGraphKernelNodeGetParams_v2(node, &p)) != CUDA_SUCCESS)
		return fail(pl, "cuGraphKernelNodeGetParams", r);
	if (R.cuGraphKernelNodeGetAttribute) {
		memset(&v, 0, sizeof(v));
		if (R.cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
						    &v) == CUDA_SUCCESS &&
		    (uint64_t)v.clusterDim.x * v.clusterDim.y * v.clusterDim.z > 1)
			return fail(pl, "a kernel node launches thread block clusters",
				    CUDA_SUCCESS);
		memset(&v, 0, sizeof(v));
		if (R.cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &v) ==
		    CUDA_SUCCESS)
			coop = v.cooperative != 0;
	}
	if (!(x = add(pl)))
		return fail(pl, "out of memory", CUDA_SUCCESS);
	x->op = OP_KERNEL;
	x->u.kernel.kind = coop ? KS_CU_LAUNCH_COOP : KS_CU_LAUNCH;
	/* A CUkernel (func NULL) is launched in the current context. */
	x->u.kernel.f = p.func ? p.func : (CUfunction)(void *)p.kern;
	x->u.kernel.grid[0] = p.gridDimX;
	x->u.kernel.grid[1] = p.gridDimY;
	x->u.kernel.grid[2] = p.gridDimZ;
	x->u.kernel.block[0] = p.blockDimX;
	x->u.kernel.block[1] = p.blockDimY;
	x->u.kernel.block[2] = p.blockDimZ;
	x->u.kernel.shmem = p.sharedMemBytes;
	x->u.kernel.params = p.kernelParams;
	x->u.kernel.extra = p.extra;
	pl->nkernels++;
	return 0;
}

static int plan_node(struct plan *pl, CUgraphNode node, int depth)
{
	CUgraphNodeType t;
	struct node *x;
	CUgraph child;
	CUresult r;

	if ((r = R.cuGraphNodeGetType(node, &t)) != CUDA_SUCCESS)
		return fail(pl, "cuGraphNodeGetType", r);
	switch (t) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return plan_kernel(pl, node);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return 0;
	case CU_GRAPH_NODE_TYPE_GRAPH:
		if ((r = R.cuGraphChildGraphNodeGetGraph(node, &child)) != CUDA_SUCCESS)
			return fail(pl, "cuGraphChildGraphNodeGetGraph", r);
		return plan_graph(pl, child, depth + 1);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
	case CU_GRAPH_NODE_TYPE_MEMSET:
	case CU_GRAPH_NODE_TYPE_HOST:
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		break;
	default:
		snprintf(pl->why, pl->why_size, "the graph has %s node, which kscope does not "
			 "run itself", foreign(t));
		return -1;
	}
	if (!(x = add(pl)))
		return fail(pl, "out of memory", CUDA_SUCCESS);
	switch (t) {
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		x->op = OP_COPY;
		r = R.cuGraphMemcpyNodeGetParams(node, &x->u.copy);
		break;
	case CU_GRAPH_NODE_TYPE_MEMSET:
		x->op = OP_MEMSET;
		r = R.cuGraphMemsetNodeGetParams(node, &x->u.memset);
		if (r == CUDA_SUCCESS && x->u.memset.elementSize != 1 &&
		    x->u.memset.elementSize != 2 && x->u.memset.elementSize != 4)
			return fail(pl, "a memset node with an element size other than 1, 2, 4",
				    CUDA_SUCCESS);
		break;
	case CU_GRAPH_NODE_TYPE_HOST:
		x->op = OP_HOST;
		r = R.cuGraphHostNodeGetParams(node, &x->u.host);
		break;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		x->op = OP_RECORD;
		r = R.cuGraphEventRecordNodeGetEvent(node, &x->u.event);
		break;
	default:
		x->op = OP_WAIT;
		r = R.cuGraphEventWaitNodeGetEvent(node, &x->u.event);
		break;
	}
	return r == CUDA_SUCCESS ? 0 : fail(pl, "reading a node's parameters", r);
}

/* Whether the driver has what running a graph node by node takes. */
static bool can_plan(void)
{
	return R.cuGraphGetNodes && R.cuGraphGetEdges_v2 && R.cuGraphNodeGetType &&
	       R.cuGraphKernelNodeGetParams_v2 && R.cuGraphMemcpyNodeGetParams &&
	       R.cuGraphMemsetNodeGetParams && R.cuGraphHostNodeGetParams &&
	       R.cuGraphChildGraphNodeGetGraph && R.cuGraphEventRecordNodeGetEvent &&
	       R.cuGraphEventWaitNodeGetEvent && R.cuMemcpy3DAsync_v2 && R.cuMemsetD8Async &&
	       R.cuMemsetD16Async && R.cuMemsetD32Async && R.cuMemsetD2D8Async &&
	       R.cuMemsetD2D16Async && R.cuMemsetD2D32Async && R.cuLaunchHostFunc &&
	       R.cuStreamWaitEvent;
}

/* The plan of g, made on its first launch.  Called with `lock` held. */
static void make_plan(struct gexec *g)
{
	struct plan pl = { .why = g->why, .why_size = sizeof(g->why) };

	if (!can_plan()) {
		g->plan = -1;
		snprintf(g->why, sizeof(g->why), "the driver lacks entry points kscope needs "
			 "to run a graph node by node");
		return;
	}
	if (plan_graph(&pl, g->copy, 0) != 0) {
		free(pl.v);
		g->plan = -1;
		return;
	}
	g->nodes = pl.v;
	g->n = pl.n;
	g->nkernels = pl.nkernels;
	g->plan = 1;
}

/* ------------------------------------------------------------------ */
/* Launches                                                            */
/* ------------------------------------------------------------------ */

static CUresult run_node(const struct node *x, CUstream s)
{
	const CUDA_MEMSET_NODE_PARAMS *m = &x->u.memset;

	switch (x->op) {
	case OP_KERNEL:
		break;                    /* the caller's */
	case OP_COPY:
		return R.cuMemcpy3DAsync_v2(&x->u.copy, s);
	case OP_MEMSET:
		if (m->height <= 1)
			return m->elementSize == 1 ? R.cuMemsetD8Async(m->dst, (unsigned char)m->value,
								      m->width, s)
			     : m->elementSize == 2 ? R.cuMemsetD16Async(m->dst,
									(unsigned short)m->value,
									m->width, s)
						   : R.cuMemsetD32Async(m->dst, m->value, m->width, s);
		return m->elementSize == 1 ? R.cuMemsetD2D8Async(m->dst, m->pitch,
							      (unsigned char)m->value, m->width,
							      m->height, s)
		     : m->elementSize == 2 ? R.cuMemsetD2D16Async(m->dst, m->pitch,
								(unsigned short)m->value, m->width,
								m->height, s)
					   : R.cuMemsetD2D32Async(m->dst, m->pitch, m->value,
								m->width, m->height, s);
	case OP_HOST:
		return R.cuLaunchHostFunc(s, x->u.host.fn, x->u.host.userData);
	case OP_RECORD:
		return R.cuEventRecord(x->u.event, s);
	case OP_WAIT:
		return R.cuStreamWaitEvent(s, x->u.event, 0);
	}
	return CUDA_SUCCESS;
}

/* A kernel node whose verdict is not PASS. */
struct held {
	size_t node;
	struct ks_cu_launch cl;
	struct ks_oprt_launch l;
	struct ks_oprt_decision d;
};

static CUresult forward(CUgraphExec e, CUstream s, bool ptsz)
{
	return (ptsz ? R.cuGraphLaunch_ptsz : R.cuGraphLaunch)(e, s);
}

static void unseen(const char *why)
{
	if (atomic_fetch_add(&ks_cu_graph_unseen, 1) == 0)
		snprintf(unseen_why, sizeof(unseen_why), "%s", why);
}

const char *ks_cu_graph_unseen_why(void)
{
	return unseen_why;
}

CUresult ks_cu_graph_launch(CUgraphExec e, CUstream s, bool ptsz, bool capturing)
{
	struct gexec *g, **p;
	struct held *held = NULL;
	size_t nheld = 0, k = 0;
	CUresult r = CUDA_SUCCESS;
	CUstream st = ptsz && !s ? CU_STREAM_PER_THREAD : s;

	atomic_fetch_add_explicit(&ks_cu_graph_launches, 1, memory_order_relaxed);
	if (capturing)                    /* becomes a child graph of the capture */
		return forward(e, s, ptsz);
	pthread_mutex_lock(&lock);
	p = find(e);
	g = *p;
	if (g && g->plan == 0 && !g->changed)
		make_plan(g);
	if (!g || g->changed || g->plan < 0) {
		char why[200];

		snprintf(why, sizeof(why), "%s",
			 !g ? "the graph was instantiated in a way kscope does not intercept"
			 : g->changed ? "the program changed the executable graph after "
					"instantiating it"
				      : g->why);
		pthread_mutex_unlock(&lock);
		unseen(why);
		return forward(e, s, ptsz);
	}
	/* The executable graph stays while it runs: CUDA forbids destroying
	 * it from another thread meanwhile (graph objects are not
	 * thread-safe), so the lock is not needed past the filters. */
	pthread_mutex_unlock(&lock);
	if (!ks_oprt_shared_lock()) {
		/* Called back from inside the driver: only forward. */
		r = forward(e, s, ptsz);
		ks_oprt_shared_unlock();
		return r;
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct ks_cu_launch *t = &g->nodes[i].u.kernel;
		struct ks_oprt_launch l;
		struct ks_oprt_decision d;
		struct ks_cu_func *f;

		if (g->nodes[i].op != OP_KERNEL)
			continue;
		f = ks_cu_func_of(t->f);
		if (!f)
			continue;
		ks_cu_announce();
		l.be = NULL;
		l.name = f->name;
		l.dim = t->grid[2] * t->block[2] > 1 ? 3 : t->grid[1] * t->block[1] > 1 ? 2 : 1;
		for (unsigned j = 0; j < 3; j++)
			l.gsize[j] = (uint64_t)t->grid[j] * t->block[j];
		if (ks_oprt_launch_decide(&l, &d) == KS_OPRT_PASS)
			continue;
		if (!held && !(held = calloc(g->nkernels, sizeof(*held))))
			break;            /* out of memory: run as it is */
		held[nheld].node = i;
		held[nheld].cl = *t;
		held[nheld].cl.func = f;
		held[nheld].cl.stream = st;
		held[nheld].l = l;
		held[nheld].l.be = &held[nheld].cl;
		held[nheld].d = d;
		nheld++;
	}
	if (!nheld) {
		r = forward(e, s, ptsz);
		ks_oprt_shared_unlock();
		free(held);
		return r;
	}
	ks_oprt_shared_unlock();
	/* A graph launch runs after the earlier launches of the same graph,
	 * whatever their streams; run node by node on st, the graph would
	 * not: the context's earlier work is waited for first (a collected
	 * kernel waits for it anyway). */
	r = R.cuCtxSynchronize();
	for (size_t i = 0; i < g->n && r == CUDA_SUCCESS; i++) {
		const struct node *x = &g->nodes[i];

		if (x->op != OP_KERNEL) {
			r = run_node(x, st);
		} else if (k < nheld && held[k].node == i) {
			r = (CUresult)ks_oprt_launch_handle(&held[k].l, &held[k].d);
			k++;
		} else {
			struct ks_cu_launch cl = x->u.kernel;

			cl.stream = st;
			r = ks_cu_forward(&cl);
		}
	}
	free(held);
	return r;
}
