package spot

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"interference.orchestrator/scheduler-plugins/pkg/pluginargs"
	"interference.orchestrator/scheduler-plugins/pkg/plugintest"
)

func nodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("eks-spot").Label("eks.amazonaws.com/capacityType", "SPOT").Obj(),
		st.MakeNode().Name("eks-od").Label("eks.amazonaws.com/capacityType", "ON_DEMAND").Obj(),
		st.MakeNode().Name("karpenter-spot").Label("karpenter.sh/capacity-type", "spot").Obj(),
		st.MakeNode().Name("karpenter-od").Label("karpenter.sh/capacity-type", "on-demand").Obj(),
		st.MakeNode().Name("unlabelled").Obj(),
		st.MakeNode().Name("odd-value").Label("karpenter.sh/capacity-type", "reserved").Obj(),
	}
}

func check(t *testing.T, scores map[string]int64, want map[string]int64) {
	t.Helper()
	for name, score := range want {
		if scores[name] != score {
			t.Errorf("%s: %d, want %d (all: %v)", name, scores[name], score, scores)
		}
	}
}

func TestPrefersSpotByDefault(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	check(t, c.Scores(t, st.MakePod().Name("p").Obj()), map[string]int64{
		"eks-spot": 100, "karpenter-spot": 100, "eks-od": 0, "karpenter-od": 0, "unlabelled": 50, "odd-value": 50,
	})
}

func TestPrefersOnDemandWhenAsked(t *testing.T) {
	c := plugintest.New(t, Name, New, pluginargs.Unknown(`{"preference": "on-demand"}`), nil, nodes())
	check(t, c.Scores(t, st.MakePod().Name("p").Obj()), map[string]int64{
		"eks-spot": 0, "karpenter-spot": 0, "eks-od": 100, "karpenter-od": 100, "unlabelled": 50,
	})
}

func TestPodAnnotationOptsOut(t *testing.T) {
	c := plugintest.New(t, Name, New, nil, nil, nodes())
	optOut := st.MakePod().Name("db").Annotation("interference.orchestrator/spot", "false").Obj()
	check(t, c.Scores(t, optOut), map[string]int64{"eks-spot": 0, "karpenter-spot": 0, "eks-od": 100, "karpenter-od": 100})
	garbled := st.MakePod().Name("x").Annotation("interference.orchestrator/spot", "maybe").Obj()
	check(t, c.Scores(t, garbled), map[string]int64{"eks-spot": 100, "eks-od": 0})
}

func TestArgs(t *testing.T) {
	for raw, want := range map[string]string{
		`{"preference": "spot"}`:      "",
		`{"preference": "SPOT"}`:      "args.preference",
		`{"preference": ""}`:          "args.preference",
		`{"optOutAnnotation": "a b"}`: "args.optOutAnnotation",
		`{"prefer": "spot"}`:          "unknown field",
	} {
		_, err := New(context.Background(), pluginargs.Unknown(raw), nil)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", raw, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), Name) {
			t.Errorf("%s: error %v, want one naming %s and %s", raw, err, Name, want)
		}
	}
}
