"""Numbers the paper reports, printed beside ours. Only what has been transcribed with its source is here;
a table without an entry shows '-' in its paper column rather than a guessed value.

Source: the paper, arXiv 2604.04929 (v1); each entry names the table or section it is read from.
"""

# Table 7 (accuracy / tokens per model and prompt mode): not transcribed yet.
TABLE7: dict[tuple[str, str, str], float] = {}

# Table 10 and Section 6: ChartQA accuracy (%).
TABLE10_CHARTQA = {"MAI": 86.8, "Full RT": 85.3}
# Table 12: speculative decoding (2B draft, 8B target, HF assisted generation) on ChartQA.
TABLE12 = {"spec_decode_slowdown": 1.16, "draft_rejection_rate": 0.40, "mai_vllm_speedup_over_8b_r": 2.40,
           "mai_vllm_chartqa_accuracy": 86.52}
# Table 10: route fractions (bounds stated in the text).
TABLE10_ROUTES = {"simple_agreement_min": 0.55, "after_reasoning_max": 0.15, "transfer_max": 0.30}
# Appendix B.7: the top 20% of reasoning tokens hold about 80% of the attention mass.
APPENDIX_B7 = {"fraction_of_tokens_for_80pct_mass": 0.20}
