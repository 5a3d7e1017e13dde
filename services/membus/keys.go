package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/bus/callout"
	"github.com/membus/membus/pkg/config"
	"github.com/membus/membus/pkg/store"
	"github.com/membus/membus/services/membus/internal/app"
	"github.com/membus/membus/services/membus/internal/cli"
)

// keysCommand manages API keys in the store the server uses; a running gateway looks keys up
// in the store on every request, so a new or revoked key takes effect at once.
func keysCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "create, list and revoke API keys (works while membus runs)"}
	cmd.AddCommand(keysCreateCommand(), keysListCommand(), keysRevokeCommand(), keysNATSIssuerCommand(),
		keysNATSAuthCommand(), keysNATSPasswordsCommand())
	return cmd
}

// keysNATSIssuerCommand prints the auth callout issuer of a NATS server that binds API keys to
// their tenant (docs/design.md §3): derived from the deployment's token, so only the public key
// goes into the server config.
func keysNATSIssuerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats-issuer",
		Short: "print the auth_callout issuer a NATS server config names for this deployment's token",
		Example: `  MEMBUS_NATS_TOKEN=… membus keys nats-issuer     # the value of MEMBUS_NATS_AUTH_ISSUER in deploy/.env
  membus keys nats-issuer --data-dir ./data        # the embedded server's (token in ./data/nats.token)`,
		Args: cli.NoArgs,
	}
	withToken(cmd, func(token string) error {
		pub, err := callout.IssuerPublicKey(token)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(cmd.OutOrStdout(), pub)
		return err
	})
	return cmd
}

// withToken gives cmd the flags that find the deployment's NATS token and runs f with it.
func withToken(cmd *cobra.Command, f func(token string) error) {
	load := withConfig(cmd, "config", "data-dir", "nats-token")
	cmd.RunE = func(*cobra.Command, []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		token, err := natsToken(cfg)
		if err != nil {
			return err
		}
		return f(token)
	}
}

// natsToken is the deployment's NATS token: MEMBUS_NATS_TOKEN, else the one `membus up` keeps
// in the data dir.
func natsToken(cfg config.Config) (string, error) {
	if cfg.NATSToken != "" {
		return cfg.NATSToken, nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "nats.token"))
	if err != nil {
		return "", cli.Usagef("no token: set MEMBUS_NATS_TOKEN / --nats-token, or point --data-dir at a membus data dir (%v)", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// keysNATSAuthCommand prints the authorization block of a standalone nats-server's config:
// the user "membus" and the services' own users with their permissions, the secrets read from
// the server's environment. deploy/nats/nats-*.conf hold exactly this block (a test checks it).
func keysNATSAuthCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats-auth",
		Short: "print the authorization block of a nats-server config: the services' users and permissions",
		Long: "Prints the authorization block of a nats-server config for this deployment's subject prefix: the user " +
			"membus (the token; every permission: membus up and the tools), one user per service with only its job's " +
			"permissions, and the auth callout for API keys. The secrets are environment variables of the server: " +
			"NATS_TOKEN, NATS_AUTH_ISSUER (`membus keys nats-issuer`) and NATS_PASS_<SERVICE> (`membus keys nats-passwords`).",
		Example: `  membus keys nats-auth                              # the block of deploy/nats/nats-*.conf
  membus keys nats-auth --subject-prefix acme         # for a deployment with its own prefix`,
		Args: cli.NoArgs,
	}
	load := withConfig(cmd, "config", "subject-prefix")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := load()
		if err != nil {
			return cli.Usagef("%v", err)
		}
		n, err := bus.NewNames(cfg.SubjectPrefix)
		if err != nil {
			return cli.Usagef("MEMBUS_SUBJECT_PREFIX: %v", err)
		}
		block, err := n.AuthConf()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(cmd.OutOrStdout(), block)
		return err
	}
	return cmd
}

// keysNATSPasswordsCommand prints each service user's password, derived from the token, as
// the variables deploy/.env hands the NATS nodes.
func keysNATSPasswordsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats-passwords",
		Short: "print the services' NATS passwords (derived from the token) as MEMBUS_NATS_PASS_<SERVICE>=… lines",
		Example: `  MEMBUS_NATS_TOKEN=… membus keys nats-passwords   # what make deploy-env writes to deploy/.env
  membus keys nats-passwords --data-dir ./data      # the embedded server's`,
		Args: cli.NoArgs,
	}
	withToken(cmd, func(token string) error {
		for _, svc := range bus.Services {
			p, err := bus.ServicePassword(token, svc)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(cmd.OutOrStdout(), "MEMBUS_%s=%s\n", bus.ConfPasswordVar(svc), p); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}

// withStore runs f on the store the configuration names.
func withStore(load func() (config.Config, error), f func(ctx context.Context, st *store.Store) error) error {
	cfg, err := load()
	if err != nil {
		return cli.Usagef("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := app.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }() // the command is done; a failed close of the pool changes none of it
	return f(ctx, st)
}

// maxKeysPerCreate bounds --count: enough for a load run's clients, not a typo's million.
const maxKeysPerCreate = 10000

func keysCreateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "create a key and print it alone on stdout (it is shown once)",
		Example: `  membus keys create --account acme --user alice --role user
  membus keys create --account acme --role admin      # acts for any user of acme (X-Membus-User)
  membus keys create --account load --user load --count 200 > keys.txt   # users load-1 … load-200 (membus bench http --keys)`,
		Args: cli.NoArgs,
	}
	account := cmd.Flags().String("account", "", "account (tenant) id (required)")
	user := cmd.Flags().String("user", "", "user id (required for role user)")
	role := cmd.Flags().String("role", "user", "user | admin | operator")
	name := cmd.Flags().String("name", "", "a label for the key")
	count := cmd.Flags().Int("count", 1, "create this many keys, one per line; role user: for users <user>-1 … <user>-N")
	load := withConfig(cmd, storeFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *count < 1 || *count > maxKeysPerCreate {
			return cli.Usagef("--count must be 1 to %d", maxKeysPerCreate)
		}
		return withStore(load, func(ctx context.Context, st *store.Store) error {
			for i := 1; i <= *count; i++ {
				u := *user
				if *count > 1 && u != "" {
					u = fmt.Sprintf("%s-%d", u, i)
				}
				key, _, err := st.CreateKey(ctx, *account, u, *role, *name)
				if err != nil {
					return err
				}
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), key); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return cmd
}

// keyJSON is a key as `membus keys list --json` prints it.
type keyJSON struct {
	ID        string     `json:"id"`
	AccountID string     `json:"account_id"`
	UserID    string     `json:"user_id,omitempty"`
	Role      string     `json:"role"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

func keysListCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list keys (never the keys themselves)", Args: cli.NoArgs}
	account := cmd.Flags().String("account", "", "only this account's keys")
	asJSON := cmd.Flags().Bool("json", false, "print a JSON array ([] when there are none)")
	load := withConfig(cmd, storeFlags...)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withStore(load, func(ctx context.Context, st *store.Store) error {
			ks, err := st.ListKeys(ctx, *account)
			if err != nil {
				return err
			}
			if *asJSON {
				out := make([]keyJSON, 0, len(ks))
				for _, k := range ks {
					out = append(out, keyJSON(k))
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return writeKeys(cmd.OutOrStdout(), ks)
		})
	}
	return cmd
}

func writeKeys(w io.Writer, ks []store.APIKey) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACCOUNT\tUSER\tROLE\tNAME\tCREATED\tREVOKED")
	for _, k := range ks {
		revoked := "-"
		if k.RevokedAt != nil {
			revoked = k.RevokedAt.UTC().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.AccountID, k.UserID, k.Role, k.Name, k.CreatedAt.UTC().Format("2006-01-02 15:04"), revoked)
	}
	return tw.Flush()
}

func keysRevokeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "revoke ID", Short: "revoke a key at once (ID from membus keys list)", Args: cli.ExactArgs(1, "ID")}
	load := withConfig(cmd, storeFlags...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withStore(load, func(ctx context.Context, st *store.Store) error {
			if err := st.RevokeKey(ctx, args[0]); err != nil {
				return fmt.Errorf("revoke %s: %w", args[0], err)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "revoked", args[0])
			return err
		})
	}
	return cmd
}
