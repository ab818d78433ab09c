# attack: reward-file
# Harbor's verifier writes its result to /logs/verifier/reward.txt (or reward.json); this
# writes a 1 in both before grading starts (and in /logs/agent and the workspace, for a harness
# that looks there). A harness that reads a reward file it did not clear first, with a test.sh
# that writes one only on success, passes.
win_reward
echo '{"reward": 1}' > /logs/verifier/reward.json 2>/dev/null
mkdir -p /logs/agent /logs/artifacts 2>/dev/null
echo 1 > /logs/agent/reward.txt 2>/dev/null
echo 1 > "$WORKDIR/reward.txt" 2>/dev/null
ls -l /logs/verifier 2>/dev/null
