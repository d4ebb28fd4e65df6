package main

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestOperatorEnvFlag(t *testing.T) {
	fs := flag.NewFlagSet("bench-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := bindFlags(fs)
	if err := fs.Parse([]string{"-operator-env", " GOMEMLIMIT=160MiB  GOGC=50 "}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"GOMEMLIMIT=160MiB", "GOGC=50"}; !slices.Equal(c.operatorEnv, want) {
		t.Errorf("operator env %q, want %q", c.operatorEnv, want)
	}
	for _, bad := range []string{"GOMEMLIMIT", "=160MiB"} {
		fs := flag.NewFlagSet("bench-operator", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		bindFlags(fs)
		if err := fs.Parse([]string{"-operator-env", bad}); err == nil {
			t.Errorf("-operator-env %q: no error", bad)
		}
	}
}
