package interference

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// CPU time-sharing, the formula of plugins/module_utils/timesharing.py (its
// module docstring, _term, NodeLoad and added_cost), which the Python engine
// and the HTTP extender price with too. On a node whose declared CPU demand D
// exceeds its CPUs C, each demanding pod is slowed by D/C and two demanding
// pods run at once with probability (C - d_i)/(D - d_i); a pod with no
// demand runs all the time. A pod's predicted slowdown is
//
//	s_i = t_n(i) * (1 + sum over other pods j of sum_r p_ir p_jr share_r(n, m_j) c(i, j))
//
// and the time-shared score is the sum over pods of s_i - 1. With no node
// oversubscribed it is twice the pair score (each pair counts in both pods'
// slowdowns).

// Kind is what time-sharing knows of a pod: its profile and its CPU demand
// in millicores (0: none). Pods of one kind price alike.
type Kind struct {
	Profile Profile
	Demand  int64
}

// kindCount is a kind and how many pods of it a node holds.
type kindCount struct {
	kind  Kind
	count int
}

// NodeLoad is one node's pods as time-sharing sees them (NodeLoad in
// timesharing.py): the node's CPUs (millicores, +Inf when unknown), the
// demand on it, the profile sums of its demanding (busy) and other (idle)
// pods, and its pods per kind, in the order their kinds first came.
type NodeLoad struct {
	capacity float64
	demand   float64
	busy     Profile
	idle     Profile
	kinds    []kindCount
}

// NewNodeLoad is an empty node of these CPUs (what Capacity returns).
func NewNodeLoad(capacity float64) *NodeLoad {
	return &NodeLoad{capacity: capacity}
}

// Capacity is the node's allocatable CPU in millicores, as the extender
// reads it (facts.py: floor(status.allocatable.cpu * 1000)), at least 1 (a
// node with none is oversubscribed by any demand); +Inf when the node does
// not say it: it is never oversubscribed.
func Capacity(node *v1.Node) float64 {
	if node == nil {
		return math.Inf(1)
	}
	quantity, ok := node.Status.Allocatable[v1.ResourceCPU]
	if !ok {
		return math.Inf(1)
	}
	var milli float64
	if quantity.CmpInt64(math.MaxInt64/1000) > 0 {
		milli = math.Floor(quantity.AsApproximateFloat64() * 1000)
	} else {
		whole := quantity.MilliValue() // rounded up: floor it as the extender does
		if resource.NewMilliQuantity(whole, quantity.Format).Cmp(quantity) > 0 {
			whole--
		}
		milli = float64(whole)
	}
	return max(milli, 1)
}

// clone is a copy to price a change on, leaving l as it is.
func (l *NodeLoad) clone() *NodeLoad {
	other := *l
	other.kinds = append(make([]kindCount, 0, len(l.kinds)+1), l.kinds...)
	return &other
}

// Add counts one pod of the kind in (sign 1) or out (sign -1).
func (l *NodeLoad) Add(kind Kind, sign int) {
	found := false
	for i := range l.kinds {
		if l.kinds[i].kind == kind {
			found = true
			l.kinds[i].count += sign
			if l.kinds[i].count == 0 {
				l.kinds = append(l.kinds[:i], l.kinds[i+1:]...)
			}
			break
		}
	}
	if !found && sign != 0 {
		l.kinds = append(l.kinds, kindCount{kind: kind, count: sign})
	}
	l.demand += float64(sign) * float64(kind.Demand)
	sums := &l.idle
	if kind.Demand != 0 {
		sums = &l.busy
	}
	for i, value := range kind.Profile {
		sums[i] += float64(sign) * value
	}
}

// Weighted is what the node's pods press on its group while they run: the
// busy sums times the fraction of the time they run, plus the idle sums.
func (l *NodeLoad) Weighted() Profile {
	running := 1 / factor(l.demand, l.capacity)
	var out Profile
	for i := range out {
		out[i] = running*l.busy[i] + l.idle[i]
	}
	return out
}

// Exposure is how much the node's cost rises per unit of cross-node
// pressure, per resource.
func (l *NodeLoad) Exposure() Profile {
	slowed := factor(l.demand, l.capacity)
	var out Profile
	for i := range out {
		out[i] = slowed*l.busy[i] + l.idle[i]
	}
	return out
}

// Cost is the sum of (s_i - 1) over the node's pods; cross is the shares
// times what the group's other nodes press while they run (nil: the node is
// in no group).
func (l *NodeLoad) Cost(cross *Profile) float64 {
	var sum float64
	for _, kc := range l.kinds {
		sum += float64(kc.count) * l.term(kc.kind, cross)
	}
	return sum
}

// factor is how much slower a demanding pod runs on a node with this demand
// and capacity (1 when it fits).
func factor(demand, capacity float64) float64 {
	return max(1, demand/capacity)
}

// together is the probability that another demanding pod runs while one of
// demand own runs on the same node.
func together(demand, capacity, own float64) float64 {
	if demand <= capacity || demand-own <= 0 {
		return 1
	}
	return max(0, (capacity-own)/(demand-own))
}

// term is (s_i - 1) of one pod of the kind on this node (it included in the
// node's sums): _term in timesharing.py.
func (l *NodeLoad) term(kind Kind, cross *Profile) float64 {
	profile := kind.Profile
	slowed := factor(l.demand, l.capacity)
	var same float64
	if kind.Demand != 0 {
		chance := together(l.demand, l.capacity, float64(kind.Demand))
		for i, p := range profile {
			if p != 0 {
				same += p * (chance*(l.busy[i]-p) + l.idle[i])
			}
		}
	} else {
		for i, p := range profile {
			if p != 0 {
				same += p * (l.busy[i]/slowed + l.idle[i] - p)
			}
		}
	}
	if cross != nil {
		for i, p := range profile {
			if p != 0 {
				same += p * cross[i]
			}
		}
	}
	if kind.Demand == 0 {
		slowed = 1
	}
	return slowed*(1+same) - 1
}

// GroupLoad is the sum over the other nodes of a node's group of their
// NodeLoad.Weighted and NodeLoad.Exposure.
type GroupLoad struct {
	Weighted Profile
	Exposure Profile
}

// AddedTimeShared is how much the time-shared score rises when one pod of
// the kind joins the node of load (added_cost in timesharing.py); load is
// left as it is. shares are the sharing option's shares (Dimensions order)
// and others the sums over the other nodes of the node's group (nil: the
// node is in no group; all shares 0: nothing crosses nodes). The node's own
// cross term does not change; each other node's cost rises by
// sum_r share_r times the change of this node's weighted pressure times its
// exposure.
func AddedTimeShared(kind Kind, load *NodeLoad, shares Profile, others *GroupLoad) float64 {
	if shares == (Profile{}) {
		others = nil
	}
	var cross *Profile
	if others != nil {
		var weighted Profile
		for i, share := range shares {
			weighted[i] = share * others.Weighted[i]
		}
		cross = &weighted
	}
	after := load.clone()
	after.Add(kind, 1)
	change := after.Cost(cross) - load.Cost(cross)
	if others != nil {
		now, before := after.Weighted(), load.Weighted()
		var rise float64
		for i, share := range shares {
			if share != 0 {
				rise += share * (now[i] - before[i]) * others.Exposure[i]
			}
		}
		change += rise
	}
	return change
}
