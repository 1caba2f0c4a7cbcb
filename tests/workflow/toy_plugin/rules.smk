# The toy paper's own stage: the privacy each run spent, from its summary table.
import pandas as pd


rule toy_privacy_ledger:
    input:
        f"{RESULTS}/toy/tables/summary.csv",
    output:
        f"{RESULTS}/toy/tables/privacy_ledger.csv",
    run:
        summary = pd.read_csv(input[0])
        summary.filter(regex="^(method|epsilon)").to_csv(output[0], index=False)


PAPER_TARGETS.append(f"{RESULTS}/toy/tables/privacy_ledger.csv")
