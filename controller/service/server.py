"""The innet service: build the testbed, program it, serve the REST API until told to stop.

    python -m controller.service [TOPOLOGY.yaml] --hosts 1 --port 8700 --run-dir /run/innet

Needs root (Mininet). It claims its run directory (controller/rundir.py), brings the testbed up
as `innet run` does (controller/bringup.py: every process and interface recorded before
anything can fail, switches watched and reinstalled when they restart), and on SIGTERM, SIGINT
or POST /shutdown tears the testbed down and removes its state. A signal, at any moment
(building, serving, during an experiment), stops it within seconds: the experiment's island
processes are stopped at once rather than after their round, and the exit status is 128 + the
signal's number (innet/stopping.py: handled whatever the process inherited, never cutting
the teardown short). `innet net up` starts it in the background, `innet serve` in the
foreground.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator, Sequence

import uvicorn

from controller.bringup import running_testbed
from controller.rundir import RunDir
from controller.service.api import create_app
from controller.service.exceptions import ServiceError
from controller.service.experiment import ServiceExperiment
from controller.service.options import SERVICE_ERROR, ServiceConfig, service_options
from innet.exceptions import InnetError, one_line
from innet.stopping import StopSignals, held, interrupted

log = logging.getLogger(__name__)

EXPERIMENT_STOP_S = 120.0  # an experiment's island processes run on the network: let them end
EXPERIMENT_ABORT_S = 3.0  # ... unless a signal stops the service: their processes are stopped


def run(args: argparse.Namespace) -> int:
    """Build, program, serve; tear down on the way out. Returns an exit status (128 + the
    signal's number when one stopped it)."""
    signals = StopSignals().install()  # a signal while building still cleans up
    try:
        return _run(args)
    except KeyboardInterrupt:
        log.info("stopped by %s; testbed torn down", signals.name)
        return 128 + (signals.received or signal.SIGINT)


def _run(args: argparse.Namespace) -> int:
    config = ServiceConfig.from_args(args)
    run_dir = RunDir(args.run_dir)
    run_dir.claim(
        "service",
        "building",
        api=f"http://{args.host}:{args.port}",
        token_file=str(args.token_file.resolve()) if args.token_file else None,
        topology=str(args.topology.resolve()) if args.topology else None,
    )
    try:
        with _testbed(config, run_dir) as experiment:
            try:
                _serve(args, config, experiment, run_dir)
            finally:
                with held():
                    if interrupted():
                        experiment.abort(wait_s=EXPERIMENT_ABORT_S)
                    else:
                        experiment.stop(wait_s=EXPERIMENT_STOP_S)
    finally:
        with held():
            run_dir.release()
    return 0


@contextlib.contextmanager
def _testbed(config: ServiceConfig, run_dir: RunDir) -> Iterator[ServiceExperiment]:
    """The testbed up, on this machine (recorded in `run_dir`) or across a cluster's
    (`--cluster`: each machine's agent records its own), with its experiment slot; torn down
    when the block ends."""
    if config.cluster is None:
        with running_testbed(config.spec, config.params, run_dir) as up:
            yield ServiceExperiment(up.testbed, up)
        return
    from controller.service.cluster import testbed_on_cluster

    with testbed_on_cluster(config) as (on_cluster, prepared):
        yield ServiceExperiment(
            on_cluster.testbed,
            on_cluster,
            cluster=prepared.to_json(),
            clocks_flag=prepared.clocks.reason,
        )


def _serve(
    args: argparse.Namespace, config: ServiceConfig, experiment: ServiceExperiment, run_dir: RunDir
) -> None:
    server: uvicorn.Server | None = None

    def stop() -> None:
        if server is not None:
            server.should_exit = True

    app = create_app(experiment.testbed, config.token, on_shutdown=stop, experiment=experiment)
    server = uvicorn.Server(
        uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
    )
    run_dir.update(status="serving")
    log.info("serving the API on http://%s:%d", args.host, args.port)
    server.run()
    if not server.started:
        raise ServiceError(
            f"the API could not listen on {args.host}:{args.port} (in use?): choose another --port"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.service", description=__doc__)
    service_options(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        return run(args)
    except InnetError as err:
        log.error("%s", err)
        print(f"{SERVICE_ERROR}{one_line(err)}", file=sys.stderr)
        return err.exit_status
    except OSError as err:  # the machine refused something (a port, a file, a namespace)
        log.exception("service failed")
        print(f"{SERVICE_ERROR}{one_line(err)}", file=sys.stderr)
        return 1
