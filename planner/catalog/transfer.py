"""Data transfer prices for the snapshot: what moving a GB between machines costs on AWS.

Full-graph training over a partitioned graph (standard or RETEXO) is billed for every byte that
crosses an AZ, a region or the internet, so those prices sit beside the instance and volume
prices. Figures: AWS's EC2 on-demand pricing page, "Data Transfer" (us-east-1; unchanged since
2020): free within one AZ over private addresses, $0.01/GB in each direction between AZs, $0.02/GB
out to another region (us-east-2 is $0.01), $0.09/GB out to the internet for the first 10 TB a
month (100 GB a month are free; larger tiers are cheaper). The first tier is what a training job
of a few TB pays; a job moving more is overestimated, never underestimated.
"""

from __future__ import annotations

from planner.catalog.models import DataTransferPrices

TRANSFER_REGION = "us-east-1"
US_EAST_1_TRANSFER = DataTransferPrices(
    same_az_usd_per_gb=0.0,
    cross_az_usd_per_gb=0.01,
    cross_region_usd_per_gb=0.02,
    internet_egress_usd_per_gb=0.09,
    source="AWS EC2 on-demand pricing, Data Transfer (us-east-1): same AZ free, cross-AZ $0.01/GB each "
    "direction, inter-region $0.02/GB out, internet $0.09/GB out (first 10 TB a month)",
)
