import { type CloudWatchClient, GetMetricDataCommand } from '@aws-sdk/client-cloudwatch';

/** The part of the CloudWatch client `queue status` uses (a real client, or a fake in tests). */
export type CloudWatchReader = Pick<CloudWatchClient, 'send'>;

/**
 * Age of the oldest message in a queue, in seconds, from the CloudWatch metric
 * `AWS/SQS ApproximateAgeOfOldestMessage` (SQS has no API that returns it): the latest 1-minute maximum of
 * the last 15 minutes, or null when CloudWatch has no datapoint (an idle queue publishes none).
 */
export async function oldestMessageAgeSeconds(
  cloudWatch: CloudWatchReader,
  queueUrl: string,
  now: Date,
): Promise<number | null> {
  const queueName = queueUrl.split('/').at(-1) ?? queueUrl;
  const response = await cloudWatch.send(
    new GetMetricDataCommand({
      StartTime: new Date(now.getTime() - 15 * 60_000),
      EndTime: now,
      ScanBy: 'TimestampDescending',
      MetricDataQueries: [
        {
          Id: 'age',
          MetricStat: {
            Metric: {
              Namespace: 'AWS/SQS',
              MetricName: 'ApproximateAgeOfOldestMessage',
              Dimensions: [{ Name: 'QueueName', Value: queueName }],
            },
            Period: 60,
            Stat: 'Maximum',
          },
        },
      ],
    }),
  );
  const latest = response.MetricDataResults?.[0]?.Values?.[0];
  return latest === undefined ? null : Math.round(latest);
}
