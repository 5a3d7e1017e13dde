// Package cli is what every membus command shares on top of spf13/cobra: exit codes (0 done,
// 1 failed, 2 usage), usage errors that say how to get help, and running a command in-process
// (main and the tests of every command package run commands the same way).
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// exitError carries a command's exit code; its message, if any, was printed already.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Exit turns an exit code into a command's error: nil for 0. The command printed what went
// wrong itself.
func Exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitError{code}
}

// usageError is a command line that cannot run: exit 2, and the message points at --help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Usagef reports a bad command line (exit code 2).
func Usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// NoArgs accepts no positional arguments.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return Usagef("unexpected argument %q", args[0])
	}
	return nil
}

// ExactArgs accepts exactly n positional arguments, named in the message when missing.
func ExactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return Usagef("want %d argument(s) %s, got %d", n, strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// Prepare sets what every command tree of membus shares: errors and usage are printed once by
// Run, flag errors are usage errors, and every command prints its help on --help.
func Prepare(root *cobra.Command) {
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
}

// Run executes root with args and returns the process exit code: 0 on success, 2 for a bad
// command line (with a pointer to --help), the command's own code when it chose one (Exit),
// else 1 with the error on stderr.
func Run(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	Prepare(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	return 1
}
