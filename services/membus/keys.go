package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/services/membus/internal/app"
)

// keys manages API keys in the store the server uses; a running gateway looks keys up in the
// store on every request, so a new or revoked key takes effect at once.
func keys(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: membus keys create|list|revoke …")
		return 2
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("membus keys "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	account := fs.String("account", "", "account (tenant) id")
	user := fs.String("user", "", "user id (required for role user)")
	role := fs.String("role", "user", "user | admin | operator")
	name := fs.String("name", "", "a label for the key")
	cfg, err := config.Load(fs, flagsFirst(rest), os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "membus keys: %v\n", err)
		return 2
	}
	ctx := context.Background()
	st, err := app.OpenStore(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "membus keys: %v\n", err)
		return 1
	}
	defer st.Close()
	switch sub {
	case "create":
		key, _, err := st.CreateKey(ctx, *account, *user, *role, *name)
		if err != nil {
			fmt.Fprintf(stderr, "membus keys create: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, key)
	case "list":
		ks, err := st.ListKeys(ctx, *account)
		if err != nil {
			fmt.Fprintf(stderr, "membus keys list: %v\n", err)
			return 1
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tACCOUNT\tUSER\tROLE\tNAME\tCREATED\tREVOKED")
		for _, k := range ks {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.UTC().Format("2006-01-02 15:04")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.AccountID, k.UserID, k.Role, k.Name, k.CreatedAt.UTC().Format("2006-01-02 15:04"), revoked)
		}
		w.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "usage: membus keys revoke ID")
			return 2
		}
		if err := st.RevokeKey(ctx, fs.Arg(0)); err != nil {
			fmt.Fprintf(stderr, "membus keys revoke %s: %v\n", fs.Arg(0), err)
			return 1
		}
		fmt.Fprintln(stdout, "revoked", fs.Arg(0))
	default:
		fmt.Fprintf(stderr, "membus keys: unknown subcommand %q (create, list, revoke)\n", sub)
		return 2
	}
	return 0
}
