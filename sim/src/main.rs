//! `mcpsim`: run, explore, replay and list the MCP transport simulation.

use clap::{Parser, Subcommand};
use mcpsim::cli::{self, Exit, ScenarioArgs};
use mcpsim::error::escape;
use std::path::PathBuf;
use std::process::ExitCode;

// Runs allocate many small, short-lived values (frames, steps, model outputs); mimalloc serves
// them faster than the system allocator. Nothing in a run depends on the allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mcpsim --version`: the package version and the commit it was built from (sim/build.rs).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MCPSIM_COMMIT"), ")");

#[derive(Parser)]
#[command(name = "mcpsim", version = VERSION, about = "Deterministic simulation of the MCP Streamable HTTP transport")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Target {
    /// Client profile: a name (see `mcpsim profiles`) or a TOML file (a path: contains `/` or
    /// ends in `.toml`; `mcpsim profiles --dump NAME` writes one to start from).
    #[arg(long, default_value = "reference")]
    client: String,
    /// Server profile: a name or a TOML file.
    #[arg(long, default_value = "reference")]
    server: String,
    /// Scenario family: a name or a TOML file (a path; see sim/scenarios/*.toml).
    #[arg(long, default_value = "long-tool")]
    scenario: String,
    /// Load balancer: a name or a TOML file (the same as --set lb=NAME|FILE, applied before
    /// the other --set overrides).
    #[arg(long, value_name = "NAME|FILE")]
    lb: Option<String>,
    /// Override a parameter: --set key=value (repeatable; see `mcpsim profiles`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

impl Target {
    fn args(&self) -> ScenarioArgs {
        ScenarioArgs {
            client: self.client.clone(),
            server: self.server.clone(),
            scenario: self.scenario.clone(),
            sets: with_lb(self.lb.as_deref(), &self.sets),
        }
    }
}

/// Every mitigation's name, for `matrix --mitigate` (its help lists them all, from the one list).
fn mitigation_names() -> Vec<&'static str> {
    mcpsim::studies::matrix::MITIGATIONS.iter().map(|m| m.name).collect()
}

/// `--lb NAME|FILE` as the `--set lb=…` it stands for, first among the overrides.
fn with_lb(lb: Option<&str>, sets: &[String]) -> Vec<String> {
    lb.map(|lb| format!("lb={lb}")).into_iter().chain(sets.iter().cloned()).collect()
}

#[derive(clap::Args, Clone)]
struct AdviseTarget {
    /// Client profile whose reconnect policy is advised for.
    #[arg(long, default_value = "reference")]
    client: String,
    /// Server profile (its retry field and idle rule enter the arithmetic).
    #[arg(long, default_value = "reference")]
    server: String,
    /// Scenario whose outage and event rate are the defaults.
    #[arg(long, default_value = "chatty-tool")]
    scenario: String,
    /// Override a parameter: --set key=value.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Load balancer: a name or a TOML file (the same as --set lb=NAME|FILE).
    #[arg(long, value_name = "NAME|FILE")]
    lb: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed and print the verdict.
    Run {
        #[command(flatten)]
        target: Target,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write the trace (JSON Lines) here.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Run the seed twice and compare the traces step by step.
        #[arg(long)]
        check_determinism: bool,
    },
    /// Run seeds in order (or generated cases) until one violates an invariant; shrink it and
    /// save its trace.
    Explore {
        #[command(flatten)]
        target: Target,
        /// How many seeds to try (with --search: how many generated cases).
        #[arg(long, default_value_t = 1000)]
        seeds: u64,
        /// First seed (with --search: the generator's seed).
        #[arg(long, default_value_t = 0)]
        start_seed: u64,
        /// Where to write the counterexample.
        #[arg(long, default_value = "traces/found")]
        out: PathBuf,
        /// Generate cases (parameters and fault plans, swarm-tested) instead of running seeds.
        #[arg(long)]
        search: bool,
        /// Coverage-guided: keep the cases that reach a new feature and mutate them (AFL-style).
        #[arg(long, conflicts_with = "search")]
        guided: bool,
        /// With --search or --guided: keep inside the design note's conditions of validity.
        #[arg(long)]
        within_conditions: bool,
        /// With --search or --guided: swarm testing: each case switches each fault kind and
        /// workload part (calls, several clients, notifications, deletes, deploy, keep-alive,
        /// chain) on or off as a whole, and generates only from those on (docs/search.md).
        #[arg(long)]
        swarm: bool,
        /// With --search or --guided: the fault kinds the cases draw, a comma list of reset,
        /// partition, server-restart, client-restart, blackhole (default: all but blackhole, so
        /// that every search draws the cases it drew before black holes existed).
        #[arg(long, value_name = "KINDS", value_delimiter = ',')]
        fault_kinds: Vec<String>,
        /// Stop at the first violation of any kind; by default only a violation that no broken
        /// condition of validity explains stops the search (explained ones are counted).
        #[arg(long)]
        all: bool,
        /// Only a violation of this invariant counts (default: any).
        #[arg(long, value_name = "NAME")]
        invariant: Option<String>,
        /// Set aside this invariant's violations (a known bug of the pair), to look past it;
        /// repeat it or separate names with commas.
        #[arg(long, value_name = "NAME", value_delimiter = ',')]
        ignore: Vec<String>,
        /// Save the counterexample as found, without shrinking it.
        #[arg(long)]
        no_shrink: bool,
        /// Run only the K-th of N consecutive blocks of the seeds and write its part for `mcpsim merge` (see docs/scale-out.md).
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        /// Where the shard writes (default shard-K-of-N).
        #[arg(long, value_name = "DIR")]
        shard_out: Option<PathBuf>,
    },
    /// Re-run a recorded trace, print its timeline, and check it is byte-identical.
    Replay {
        file: PathBuf,
        /// Only the verdict and the comparison, no timeline.
        #[arg(long)]
        quiet: bool,
        /// Overwrite the file with the new recording when it diverged.
        #[arg(long)]
        rerecord: bool,
    },
    /// Draw a trace as a sequence diagram (client, load balancer and server lifelines).
    Show {
        file: PathBuf,
        /// text, mermaid (pastes into GitHub Markdown), svg (opens in a browser) or html (one page:
        /// the diagram, the cause chain and an interactive timeline).
        #[arg(long, default_value = "text")]
        format: mcpsim::report::diagram::Format,
        /// Draw every step, without folding runs of similar steps.
        #[arg(long)]
        no_collapse: bool,
        /// Stop after this many rows.
        #[arg(long)]
        max_rows: Option<usize>,
        /// Write the diagram here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Every client × server × scenario: which invariants break, how often, and how to replay one.
    /// Exit status: 0 every cell clean, 1 some cell broke an invariant, 2 bad input.
    Matrix {
        /// Comma-separated client profiles (default: all; a repeated one runs once).
        #[arg(long, value_delimiter = ',')]
        clients: Vec<String>,
        /// Comma-separated server profiles (default: all).
        #[arg(long, value_delimiter = ',')]
        servers: Vec<String>,
        /// Comma-separated scenarios (default: all).
        #[arg(long, value_delimiter = ',')]
        scenarios: Vec<String>,
        /// Seeds per cell.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// table (for a terminal), md (Markdown, as --doc writes), csv or json.
        #[arg(long, default_value = "table")]
        format: String,
        /// Rerun with one mitigation applied.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(mitigation_names()))]
        mitigate: Option<String>,
        /// Worker threads (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write the compatibility document here (with a paragraph per broken cell).
        #[arg(long)]
        doc: Option<PathBuf>,
        /// Where the document's traces go.
        #[arg(long, default_value = "traces/matrix")]
        traces: PathBuf,
        /// Run only shard K of N (cell i goes to shard i mod N + 1) and write its cells for
        /// `mcpsim merge` (see docs/scale-out.md).
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        /// Where the shard writes (default shard-K-of-N).
        #[arg(long, value_name = "DIR")]
        shard_out: Option<PathBuf>,
    },
    /// Merge the shard directories of one `matrix`, `sweep`, `check` or `explore` run with
    /// --shard K/N: prints (and writes) exactly what the unsharded command does. Exit status as
    /// that command.
    Merge {
        /// The shard directories, every K of N once.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// matrix: table, md, csv or json (default table); check: text or html (default text).
        #[arg(long)]
        format: Option<String>,
        /// matrix: also write the compatibility document here.
        #[arg(long)]
        doc: Option<PathBuf>,
        /// matrix: where the document's traces go.
        #[arg(long, default_value = "traces/matrix")]
        traces: PathBuf,
        /// sweep: write each cell's row here.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// sweep: draw the plot here (SVG).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// check: write the report here.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// explore: where the counterexample's trace goes.
        #[arg(long, default_value = "traces/found")]
        out: PathBuf,
    },
    /// Check your own deployment (server, load balancer, clients, workload as a TOML file)
    /// against every scenario family: per client × family ok or the invariants broken, the
    /// mitigations that fix each broken cell, and the advised retention and idle TTL. Exit
    /// status: 0 every cell clean, 1 some cell broke an invariant, 2 bad input.
    Check {
        /// The deployment file (see docs/examples/deployment.toml and docs/your-system.md).
        file: PathBuf,
        /// Seeds per cell.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        /// text, or html (one self-contained page; needs -o).
        #[arg(long, default_value = "text")]
        format: String,
        /// Write the report here.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Run only shard K of N (cell i goes to shard i mod N + 1) and write its part for `mcpsim merge` (see docs/scale-out.md).
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        /// Where the shard writes (default shard-K-of-N).
        #[arg(long, value_name = "DIR")]
        shard_out: Option<PathBuf>,
        /// What if: override a key for every cell, after the file's own settings (repeatable;
        /// e.g. --set lb.routing=sticky-session; see `mcpsim profiles`).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Vary one or two keys over a grid; per cell, how often each outcome occurred (with Wilson
    /// intervals), the predicted and the measured safe boundary. Exit status: 0 no run violated an
    /// invariant, 1 some run of some cell did, 2 bad input.
    Sweep {
        #[command(flatten)]
        target: Target,
        /// KEY=A..B:STEP or KEY=v1,v2,… (once or twice); KEY is any key --set takes, a short
        /// key or a field by its path (server.retention.max_events, lb.max_lifetime).
        #[arg(long = "vary", value_name = "KEY=RANGE", required = true)]
        vary: Vec<String>,
        /// Seeds per cell.
        #[arg(long, default_value_t = 20)]
        seeds: u64,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Write each cell's row here (in grid order; the same sweep writes the same bytes).
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Skip cells already in the CSV.
        #[arg(long)]
        resume: bool,
        /// Draw the rates (one key) or a heatmap (two keys) as SVG (the file must end in .svg).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// The loss-free rate a cell needs to count as safe.
        #[arg(long, default_value_t = 1.0)]
        threshold: f64,
        /// Run only shard K of N (cell i goes to shard i mod N + 1) and write its part for `mcpsim merge` (see docs/scale-out.md).
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        /// Where the shard writes (default shard-K-of-N).
        #[arg(long, value_name = "DIR")]
        shard_out: Option<PathBuf>,
    },
    /// The minimal safe retention (events per stream, time window) and idle TTL for a client
    /// policy, with the arithmetic shown.
    Advise {
        #[command(flatten)]
        target: AdviseTarget,
        /// Load balancer idle timeout (e.g. 60s).
        #[arg(long)]
        lb_idle: Option<String>,
        /// Events on the stream, with a unit: 10/s, 600/m or 2/h (0/s for a silent stream).
        #[arg(long, value_name = "N/UNIT")]
        event_rate: Option<String>,
        /// The longest outage to survive (e.g. 4m).
        #[arg(long)]
        max_outage: Option<String>,
        /// Ask the other way round: the longest outage this retention (events per stream, or
        /// unbounded) survives, with the scenario's other server settings.
        #[arg(long, value_name = "N")]
        retention: Option<String>,
        /// Run the simulator just below and just above the answer.
        #[arg(long)]
        verify: bool,
        /// Seeds per verification probe.
        #[arg(long, default_value_t = 20)]
        seeds: u64,
        /// Advise the Tasks extension instead: the TTL a task of the scenario's longest tool
        /// needs under the server's expiry rule, the client's poll interval and the outage.
        #[arg(long, conflicts_with_all = ["retention", "verify"])]
        tasks: bool,
    },
    /// List client and server profiles, scenarios, invariants and settable keys.
    Profiles {
        /// Print this built-in profile as a TOML file to start from (NAME, or client:NAME,
        /// server:NAME, lb:NAME); use the file with --client FILE / --server FILE.
        #[arg(long, value_name = "NAME", conflicts_with = "sources")]
        dump: Option<String>,
        /// Print every field of every SDK profile with its value and the source line it was
        /// read from, as Markdown tables.
        #[arg(long)]
        sources: bool,
        /// With --sources: write the tables between the `profile-sources` markers of this file
        /// (docs/model.md) instead of printing them.
        #[arg(long, value_name = "FILE", requires = "sources")]
        doc: Option<std::path::PathBuf>,
    },
    /// Runs per second of long-tool and chatty-tool beside an empty madsim runtime.
    Bench {
        /// Runs of each, per round (a sixteenth of them for the two-hour chatty-tool line).
        #[arg(long, default_value_t = 2000)]
        runs: u64,
        /// Rounds of each: the table gives the median and the range.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
        /// Run --runs seeds of the target (--client, --server, --scenario, --set) and nothing
        /// else, and print their rate: the loop to put under `perf record`.
        #[arg(long)]
        profile: bool,
        /// With --profile: run the model alone (the madsim-free `Pair` the `× model` column
        /// measures) driving the target's exchange to its seed 0's end, instead of the simulation:
        /// the other half of the ratio, for `perf` or valgrind (`sim/bench/model-ratio.sh`).
        #[arg(long, requires = "profile")]
        model_alone: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Probe a real system over loopback through a fault-injecting proxy.
    #[command(subcommand)]
    Probe(ProbeCommand),
    /// Print a shell completion script, e.g. `mcpsim completions bash > ~/.local/share/bash-completion/completions/mcpsim`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ProbeCommand {
    /// Probe an MCP server: a table of verdicts, a trace per scenario, a server profile TOML.
    Server {
        /// The MCP endpoint, e.g. http://127.0.0.1:3000/mcp (loopback only unless --allow-remote).
        #[arg(long)]
        url: String,
        #[arg(long)]
        allow_remote: bool,
        /// Where traces and server-profile.toml go (default ./probe-out; real runs do not replay, so keep them out of traces/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run only these scenarios (basics always runs); repeat or comma-separate.
        #[arg(long = "scenario", value_delimiter = ',')]
        scenarios: Vec<String>,
        /// Wall-clock bound on one scenario, in seconds.
        #[arg(long, default_value_t = 90)]
        scenario_timeout: u64,
        /// Run idle-expiry: leave sessions idle up to this long (e.g. 90s, 10m) and decide the
        /// idle TTL and rule within it. Without it the scenario is skipped.
        #[arg(long)]
        idle_bound: Option<String>,
        /// A server without the probe tools: one of its own tools for the long call (every
        /// scenario that tool allows runs; the others say why they were skipped).
        #[arg(long)]
        tool: Option<String>,
        /// The --tool's arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// How long one call of --tool runs (e.g. 5s); measured by basics when not given.
        #[arg(long)]
        tool_duration: Option<String>,
        /// Also mirror every scenario in the simulator through this proxy description (a built-in
        /// lb profile such as nginx or haproxy, or a profile file) and print the verdicts side by side.
        #[arg(long)]
        lb: Option<String>,
        /// The same server without the proxy in front (the proxy at --url): probed beside it, each
        /// fingerprint field attributed to the server or the proxy, and a [[lb.hops]] entry written
        /// for what is the proxy's.
        #[arg(long)]
        direct: Option<String>,
    },
    /// Probe the real SDK fixture servers (sim/probe/fixtures, after install.sh) and compare each
    /// probe scenario's verdict with the simulator's, and each probed field with the built-in profile.
    Reality {
        /// Only these SDKs (ts, py, rust); repeat or comma-separate. Default: all three.
        #[arg(long = "sdk", value_delimiter = ',')]
        sdks: Vec<String>,
        /// Rewrite the generated table and field list of this document (docs/reality.md).
        #[arg(long)]
        doc: Option<PathBuf>,
        /// Only the proxies (nginx, HAProxy in front of the fixtures, their measurements): skip
        /// the SDK, variant and client halves.
        #[arg(long)]
        proxies_only: bool,
        /// Also mirror every SDK scenario through this proxy description (a built-in lb profile or
        /// a file) and print the verdicts side by side.
        #[arg(long)]
        lb: Option<String>,
    },
    /// Probe an MCP client: run COMMAND against mcpsim's own stand-in server (URL in
    /// MCPSIM_PROBE_URL) behind the fault proxy, observe it from the server side; a trace per run,
    /// the oracles' verdicts and a client profile TOML.
    Client {
        /// Where traces and client-profile.toml go (default ./probe-out).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run only these probe runs (cut-resume, cut-refuse, not-found, empty-resume, cut-before-id, retry-short, retry-long; request-timeout with --request-timeout-bound).
        #[arg(long = "run", value_delimiter = ',')]
        runs: Vec<String>,
        /// Wall-clock limit of one run in seconds; the client is killed after it.
        #[arg(long, default_value_t = 20)]
        run_limit: u64,
        /// Also run request-timeout (off by default): the tool call's event stream opens and stays
        /// silent, and the run waits up to this long after the call (2s..4m, e.g. 75s) for the
        /// client to cancel, close the stream or exit, which decides request_timeout (nothing by
        /// then: "none", or longer than the bound). Costs up to the bound plus a second of wall
        /// clock (a client that gives up sooner ends the run sooner: ts-sdk at 60 s).
        #[arg(long)]
        request_timeout_bound: Option<String>,
        /// The profile's name.
        #[arg(long, default_value = "probed-client")]
        name: String,
        /// Compare the decided fields with this built-in client profile (e.g. py-sdk, ts-sdk).
        #[arg(long)]
        compare: Option<String>,
        /// The client command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    mcpsim::engine::logging::init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap's own text, on stdout.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", one_line_usage_error(&e, std::env::args().skip(1)));
            return ExitCode::from(Exit::BadInput as u8);
        }
    };
    let result = match cli.command {
        Command::Run { target, seed, trace, check_determinism } => {
            cli::cmd_run(&target.args(), seed, trace.as_deref(), check_determinism)
        }
        Command::Explore {
            target,
            seeds,
            start_seed,
            out,
            search,
            guided,
            within_conditions,
            swarm,
            fault_kinds,
            all,
            invariant,
            ignore,
            no_shrink,
            shard,
            shard_out,
        } => {
            let shrink = !no_shrink;
            let shard = cli::ShardArgs { shard, out: shard_out };
            let explore = cli::ExploreArgs {
                seeds,
                start_seed,
                out,
                search,
                guided,
                within_conditions,
                swarm,
                fault_kinds,
                all,
                invariant,
                ignore,
                shrink,
                shard,
            };
            cli::cmd_explore(&target.args(), &explore)
        }
        Command::Replay { file, quiet, rerecord } => cli::cmd_replay(&file, quiet, rerecord),
        Command::Show { file, format, no_collapse, max_rows, output } => {
            cli::cmd_show(&file, format, !no_collapse, max_rows, output.as_deref())
        }
        Command::Matrix {
            clients,
            servers,
            scenarios,
            seeds,
            format,
            mitigate,
            jobs,
            doc,
            traces,
            shard,
            shard_out,
        } => {
            let args = cli::MatrixArgs {
                clients,
                servers,
                scenarios,
                seeds,
                format,
                mitigate,
                jobs,
                doc,
                traces,
                shard: cli::ShardArgs { shard, out: shard_out },
            };
            cli::cmd_matrix(&args)
        }
        Command::Merge { dirs, format, doc, traces, csv, plot, output, out } => {
            cli::cmd_merge(&cli::MergeArgs { dirs, format, doc, traces, csv, plot, output, out })
        }
        Command::Check { file, seeds, format, output, jobs, shard, shard_out, sets } => {
            let shard = cli::ShardArgs { shard, out: shard_out };
            cli::cmd_check(&cli::CheckArgs { file, seeds, format, output, jobs, shard, sets })
        }
        Command::Sweep { target, vary, seeds, jobs, csv, resume, plot, threshold, shard, shard_out } => {
            let opts = mcpsim::studies::sweep::SweepOptions { seeds, jobs, csv, resume, threshold };
            let shard = cli::ShardArgs { shard, out: shard_out };
            cli::cmd_sweep(&target.args(), &vary, &opts, plot.as_deref(), &shard)
        }
        Command::Advise { target, lb_idle, event_rate, max_outage, retention, verify, seeds, tasks } => {
            let args = ScenarioArgs {
                client: target.client,
                server: target.server,
                scenario: target.scenario,
                sets: with_lb(target.lb.as_deref(), &target.sets),
            };
            if tasks {
                cli::cmd_advise_tasks(&args, max_outage.as_deref())
            } else {
                cli::cmd_advise(&args, [lb_idle, event_rate, max_outage], retention.as_deref(), verify, seeds)
            }
        }
        Command::Profiles { sources: true, doc, .. } => cli::cmd_sources(doc.as_deref()),
        Command::Profiles { dump: None, .. } => cli::cmd_profiles(),
        Command::Profiles { dump: Some(name), .. } => cli::cmd_dump(&name),
        Command::Bench { runs, rounds, profile, model_alone, target } => {
            cli::cmd_bench(runs, rounds, profile.then(|| target.args()).as_ref(), model_alone)
        }
        Command::Probe(ProbeCommand::Server {
            url,
            allow_remote,
            out,
            scenarios,
            scenario_timeout,
            idle_bound,
            tool,
            args,
            tool_duration,
            lb,
            direct,
        }) => cli::cmd_probe_server(
            &url,
            allow_remote,
            out,
            scenarios,
            scenario_timeout,
            idle_bound,
            cli::ServerExtras { tool, args, tool_duration, lb, direct },
        ),
        Command::Probe(ProbeCommand::Reality { sdks, doc, proxies_only, lb }) => {
            cli::cmd_probe_reality(sdks, doc, proxies_only, lb)
        }
        Command::Probe(ProbeCommand::Client {
            out,
            runs,
            run_limit,
            request_timeout_bound,
            name,
            compare,
            command,
        }) => cli::cmd_probe_client(command, out, runs, run_limit, request_timeout_bound, name, compare),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "mcpsim", &mut script);
            print!("{}", String::from_utf8_lossy(&script));
            Ok(Exit::Clean)
        }
    };
    match result {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(e @ mcpsim::SimError::Runtime(_)) => {
            eprintln!("mcpsim: internal error: {}", escape(&e.to_string()));
            ExitCode::from(Exit::Internal as u8)
        }
        Err(e) => {
            eprintln!("mcpsim: {}", escape(&e.to_string()));
            ExitCode::from(Exit::BadInput as u8)
        }
    }
}

/// A reader that stopped reading (`mcpsim profiles | head -1`) ends the program quietly, exit 0:
/// Rust ignores SIGPIPE, so `println!` into a closed pipe panics; this hook turns exactly that
/// panic into a silent exit and leaves every other panic to the default hook.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// clap's usage error as one line: its message (the lines before `Usage:`, tips left out), then
/// where the help is: `error: unexpected argument '--bogus' found; see 'mcpsim run --help'`.
fn one_line_usage_error(e: &clap::Error, args: impl Iterator<Item = String>) -> String {
    use clap::CommandFactory;
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "error: no command given; see 'mcpsim --help'".to_string();
    }
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tip:") && !l.starts_with("For more information"))
        .collect();
    let commands = Cli::command();
    let command = args.filter(|a| !a.starts_with('-')).take(1).find(|a| commands.find_subcommand(a).is_some());
    let help = match command {
        Some(c) => format!("mcpsim {c} --help"),
        None => "mcpsim --help".to_string(),
    };
    format!("{}; see '{help}'", escape(&message.join(" ")))
}
