package interference

import (
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// podProfiles remembers each pod's parsed profile by UID, with the annotation
// and label text it was read from: a pod is parsed once when the plugin
// first meets it (as the pod being scheduled or as a pod on a node), and
// again only if its annotation or label changes. Comparing the remembered
// text with the pod's is cheap: an assumed pod and the pod it was copied
// from share the same string data.
type podProfiles struct {
	mu      sync.Mutex
	entries map[types.UID]*podEntry
	parses  atomic.Int64 // profiles parsed (memo misses), for the tests
}

type podEntry struct {
	annotation, label string
	hasAnnotation     bool
	hasLabel          bool
	demandText        string // the CPUDemandAnnotation value ("" when absent)
	profile           Profile
	usable            bool  // false: no profile, or a bad one (the pod is neutral)
	demand            int64 // CPU demand in millicores (0: none, or not whole millicores)
}

// maxPodEntries bounds the memo when pods come and go faster than the
// informer's delete events reach it (or without an informer, in tests).
// Forgetting costs only a parse.
const maxPodEntries = 1 << 17

func newPodProfiles() *podProfiles {
	return &podProfiles{entries: map[types.UID]*podEntry{}}
}

// forget drops a deleted pod.
func (c *podProfiles) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.entries, uid)
	c.mu.Unlock()
}

// profileOf returns the pod's profile and whether it is usable.
func (p *Plugin) profileOf(logger klog.Logger, pod *v1.Pod) (Profile, bool) {
	entry := p.podOf(logger, pod)
	return entry.profile, entry.usable
}

// podOf returns what the plugin reads of a pod: its profile, whether it is
// usable, and its CPU demand. A bad profile is logged once, when it is
// parsed: once per pod and text.
func (p *Plugin) podOf(logger klog.Logger, pod *v1.Pod) *podEntry {
	annotation, hasAnnotation := pod.Annotations[p.args.ProfileAnnotation]
	label, hasLabel := pod.Labels[p.args.TypeLabel]
	demandText := pod.Annotations[CPUDemandAnnotation]
	c := p.pods
	c.mu.Lock()
	entry, ok := c.entries[pod.UID]
	c.mu.Unlock()
	if ok && entry.hasAnnotation == hasAnnotation && entry.hasLabel == hasLabel &&
		entry.annotation == annotation && entry.label == label && entry.demandText == demandText {
		return entry
	}
	c.parses.Add(1)
	profile, usable, problem := podProfile(annotation, hasAnnotation, label, hasLabel)
	entry = &podEntry{
		annotation: annotation, label: label, hasAnnotation: hasAnnotation, hasLabel: hasLabel,
		demandText: demandText, profile: profile, usable: usable, demand: ParseCPUDemand(demandText),
	}
	if problem != nil {
		outcome := "the pod counts as neutral"
		if usable {
			outcome = "the pod counts by its type label"
		}
		logger.Info("Ignoring a bad interference profile: "+outcome, "plugin", Name, "pod", klog.KObj(pod),
			"annotation", p.args.ProfileAnnotation, "label", p.args.TypeLabel, "err", problem)
	}
	c.mu.Lock()
	if len(c.entries) >= maxPodEntries {
		c.entries = map[types.UID]*podEntry{}
	}
	c.entries[pod.UID] = entry
	c.mu.Unlock()
	return entry
}

// nodeSums is the sum of the profiles of the pods on one node (assumed pods
// included), valid for one NodeInfo generation. The framework gives every
// change of a NodeInfo (a pod added, assumed, removed, the node updated) a
// new, never reused generation, and its snapshot keeps the generation of the
// NodeInfo it copies, so a node's sum is recomputed once per change, not per
// pod scheduled.
type nodeSums struct {
	generation int64
	sum        Profile
	// demand is the CPU demand (millicores) of the node's pods: above 0, CPU
	// time-sharing scores every pod.
	demand int64
	// members holds the pods on the node with a profile or a CPU demand by
	// UID (a pod without a usable profile as the zero profile), so that Score
	// can leave out the pod being scheduled when it is already in the
	// NodeInfo. nil when there are none.
	members map[types.UID]Kind
	// load is the node as CPU time-sharing sees it, built from members the
	// first time a cycle with time-sharing needs it (loadOf).
	loadOnce sync.Once
	load     *NodeLoad
}

// nodeCache maps a node name to its *nodeSums. A sync.Map: Score reads it from
// the framework's parallel workers, and each entry is replaced, never changed.
type nodeCache struct{ entries sync.Map }

// sumsOf returns the node's sums for this NodeInfo's generation, recomputing
// them when the node changed since they were last computed.
func (p *Plugin) sumsOf(logger klog.Logger, nodeInfo fwk.NodeInfo) *nodeSums {
	name := nodeInfo.Node().Name
	generation := nodeInfo.GetGeneration()
	if cached, ok := p.nodes.entries.Load(name); ok {
		if sums := cached.(*nodeSums); sums.generation == generation {
			return sums
		}
	}
	sums := &nodeSums{generation: generation}
	for _, info := range nodeInfo.GetPods() {
		pod := info.GetPod()
		entry := p.podOf(logger, pod)
		profiled := entry.usable && entry.profile != (Profile{})
		if !profiled && entry.demand == 0 {
			continue
		}
		if profiled {
			for i := range sums.sum {
				sums.sum[i] += entry.profile[i]
			}
		}
		sums.demand += entry.demand
		if sums.members == nil {
			sums.members = map[types.UID]Kind{}
		}
		kind := Kind{Demand: entry.demand}
		if profiled {
			kind.Profile = entry.profile
		}
		sums.members[pod.UID] = kind
	}
	p.nodes.entries.Store(name, sums)
	return sums
}

// loadOf returns the node's time-sharing load for the generation of sums
// (sumsOf(nodeInfo)), built once from its members in the NodeInfo's pod
// order, with the node's allocatable CPU. Not to be changed.
func (p *Plugin) loadOf(sums *nodeSums, nodeInfo fwk.NodeInfo) *NodeLoad {
	sums.loadOnce.Do(func() {
		load := NewNodeLoad(Capacity(nodeInfo.Node()))
		if len(sums.members) > 0 {
			for _, info := range nodeInfo.GetPods() {
				if kind, ok := sums.members[info.GetPod().UID]; ok {
					load.Add(kind, 1)
				}
			}
		}
		sums.load = load
	})
	return sums.load
}

// forgetNode drops a deleted node.
func (c *nodeCache) forget(name string) { c.entries.Delete(name) }
