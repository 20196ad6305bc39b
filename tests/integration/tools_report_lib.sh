# Sourced by tests/integration/tools_report*.sh: the trainers' runner (trainers/observe_lib.sh),
# the tools, the checker, and the page's checks in a real browser.
source "$(dirname "${BASH_SOURCE[0]}")/trainers/observe_lib.sh"
REPORT=$BUILD/usbyte-report
SIM=$BUILD/usbyte-sim
CHK="python3 $ROOT/tests/integration/tools_report_check.py"
[ -x "$REPORT" ] || { echo "missing $REPORT (make)"; exit 1; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# check NAME DIR REPORTS...: the page and the trace of DIR against the reports.
check() {
    local name=$1 dir=$2
    shift 2
    $CHK html "$dir/usbyte-report.html" "$@" || fail "$name: page"
    $CHK trace "$dir/usbyte-trace.json" "$@" --sim "$SIM" || fail "$name: trace"
}

have_browser() { command -v chromium > /dev/null; }

# browse OUTPUT_STDERR ARGS...: headless chromium, its messages in OUTPUT_STDERR.
browse() {
    local log=$1
    shift
    timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome" \
        --enable-logging=stderr --v=0 "$@" 2> "$log"
}

# in_browser NAME PAGE PROBLEMS BAND... -- REPORTS...: the page loads without a console message,
# the DOM's numbers equal the reports', and the first screen (1280x900) shows the verdict: its
# box's background (report_html.c's .ok #e8f5e9, .bad #ffebee) fills BAND ("RRGGBB:N": at least
# N bands of that colour).  TOOLS_SCREENSHOTS=DIR keeps the screenshot there as NAME.png.
in_browser() {
    local name=$1 page=$2 problems=$3
    shift 3
    local bands=()
    while [ "$1" != -- ]; do bands+=(--band "$1"); shift; done
    shift
    browse "$WORK/$name-dom.err" --dump-dom "file://$page" > "$WORK/$name-dom.html" || fail "chromium --dump-dom $name"
    $CHK console "$WORK/$name-dom.err" || fail "$name: console messages"
    if [ "$problems" != compare ]; then
        $CHK html "$WORK/$name-dom.html" "$@" --dom --expect-problems "$problems" || fail "$name: the browser's DOM"
    fi
    browse "$WORK/$name-shot.err" --screenshot="$WORK/$name.png" --window-size=1280,900 "file://$page" > /dev/null ||
        fail "chromium --screenshot $name"
    $CHK png "$WORK/$name.png" --min-width 1280 --min-height 900 "${bands[@]}" || fail "$name: screenshot"
    if [ -n "${TOOLS_SCREENSHOTS:-}" ]; then
        mkdir -p "$TOOLS_SCREENSHOTS" && cp "$WORK/$name.png" "$TOOLS_SCREENSHOTS/"
    fi
}
