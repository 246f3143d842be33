#!/usr/bin/env bash
# The README's pictures, made by the tests that check them: the live view (`bench --tui` under
# tmux, its colours drawn by headless Chromium) and the HTML report (`report --html`, drawn by
# Chromium from disk with the network off), written to docs/tui.png and docs/report-html.png.
# Needs tmux and chromium (tools/install-peers.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
WIREBENCH_SCREENSHOTS="$root/docs" cargo test --test tui --test report_html -- --include-ignored \
  the_view_draws_moves_and_q_ends_the_run_with_its_report the_page_renders_from_disk_with_no_network
ls -l docs/tui.png docs/report-html.png
