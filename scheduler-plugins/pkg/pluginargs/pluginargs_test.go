package pluginargs

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

type args struct {
	Key   string `json:"key,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

func (a args) Validate() error {
	if a.Limit < 0 {
		return errors.New("Test: args.limit: negative")
	}
	return QualifiedName("Test", "key", a.Key, "label key")
}

func TestLoad(t *testing.T) {
	defaults := args{Key: "example.com/key", Limit: 3}
	for _, tc := range []struct {
		obj     runtime.Object
		want    args
		wantErr string
	}{
		{nil, defaults, ""},
		{Unknown(``), defaults, ""},
		{Unknown(`{"limit": 5}`), args{Key: "example.com/key", Limit: 5}, ""},
		{Unknown(`{"limit": -1}`), args{}, "Test: args.limit"},
		{Unknown(`{"key": "not a key!"}`), args{}, `Test: args.key: "not a key!" is not a valid label key`},
		{Unknown(`{"limt": 5}`), args{}, "unknown field"},
		{&runtime.Unknown{Raw: []byte("key: a/b")}, args{Key: "a/b", Limit: 3}, ""},
	} {
		got, err := Load("Test", tc.obj, defaults)
		if tc.wantErr == "" && err != nil {
			t.Errorf("%v: %v", tc.obj, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "Test")) {
			t.Errorf("%v: error %v, want one with %q", tc.obj, err, tc.wantErr)
		}
		if got != tc.want {
			t.Errorf("%v: args %+v, want %+v", tc.obj, got, tc.want)
		}
	}
}
