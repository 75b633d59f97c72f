// Package grants owns "yes, and don't ask again" (docs/design.md#permission-rules-modes-and-grants): what a
// grant covers (its scope, worked out from the call people were asked
// about), whether a later call is covered, making a grant when a request
// is approved with ♾️ / Always / `approve --always` by an electorate that
// may grant, and the small Store interface grants live in (Redis only:
// quorum/redis/grants.go).
//
// A scope never widens what people saw. A command grant covers a later
// call only when nothing that made the first one risky grew: the same
// wrappers (ssh HOST, docker exec C, kubectl exec P --, sudo, env, npx …,
// each judged as the command it runs), program and subcommand; no option
// the first call did not have, except those that only narrow or print;
// narrowing and target options kept; no wider operands (more of them,
// another resource kind, a path outside the granted one). Which options
// narrow, name a target or widen, and how a program's operands may differ,
// is data: stretch.yaml. A line that cannot be followed is granted exactly;
// a tool grant is the same tool, a network grant the same host and port —
// always in the same workspace, never at a higher risk level than the call
// approved, and never for a call with a risk reason the approved call did
// not have.
//
// It imports bot, mvdan.cc/sh and go-yaml only; it must not import bot/permissions
// (which decides with it) or any store or adapter.
package grants

// Covered says exactly what a grant covers, for `signoff grants --help`
// and docs/grants.md.
const Covered = `A grant ("don't ask again": ♾️, Always, approve --always) covers a later call
only when nothing that made the approved one risky grew:
  - the same persona and workspace, a risk level no higher, and no risk
    reason the approved call did not have;
  - a command: the same program and subcommand (terraform destroy); run
    through the same wrappers, word for word (ssh prod, sudo -u deploy,
    docker exec web, kubectl exec api --, env A=1, nice, timeout 60); the
    command a wrapper runs is judged as the command itself (npx, pnpm dlx,
    bunx: the package is the program);
  - no option the approved call did not have, except options that only
    narrow (terraform -target, kubectl -l, --dry-run) or only change what
    is printed (--verbose, --quiet, --color, --help); options that name a
    target (-n NAMESPACE, --context, -chdir, -C DIR) kept exactly, narrowing
    ones kept with no new value (a -target dropped or added to is wider);
  - no wider operands: never more of them; per program the same ones
    (systemctl restart nginx), paths inside the approved paths (rm,
    truncate, cp), the same resource kind (kubectl delete pod …), or any
    (git push REMOTE BRANCH);
  - a command line that is not one plain command (a pipe, ;, $( ), a glob,
    bash -c, xargs) is covered only exactly as approved;
  - a tool call: the same tool in the same workspace; network: the same
    host and port.
Which options narrow, name a target or widen, and each program's operand
rule, are data: bot/grants/stretch.yaml. The card and ` + "`signoff grants`" + ` show
each grant in these terms before anyone answers.`
