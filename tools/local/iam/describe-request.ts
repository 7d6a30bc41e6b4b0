import { LOCAL_ACCOUNT_ID } from './resolve-policies.ts';

/** A request as the proxy received it (its body read whole). @internal */
export interface IncomingRequest {
  readonly method: string;
  /** Path and query, as on the request line (`/bucket/key?versionId=…`). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/** One authorization AWS makes for a request: an IAM action on a resource, with its condition keys. @internal */
export interface AuthorizationCall {
  /** `sqs:ReceiveMessage`, `s3:GetObject`, `dynamodb:PutItem`, … */
  readonly action: string;
  /** The resource's ARN, or `*` for an action without one (ListQueues, ListAllMyBuckets). */
  readonly resource: string;
  /** Request-specific condition keys (`dynamodb:LeadingKeys`). */
  readonly context?: Readonly<Record<string, string | string[]>>;
}

/** What a request is: who signed it for which service, the API operation, and what AWS authorizes for it. @internal */
export interface DescribedRequest {
  /** The service of the SigV4 credential scope (`sqs`, `s3`, `dynamodb`), or undefined when unsigned. */
  readonly service: string | undefined;
  readonly accessKeyId: string | undefined;
  readonly region: string | undefined;
  /** The API operation (`ReceiveMessage`, `GetObject`, `TransactWriteItems`). */
  readonly operation: string;
  /** Every authorization the request needs, in AWS's order: one per contained action for batches and transactions. */
  readonly calls: readonly AuthorizationCall[];
}

/** The partition key attribute of a table, for `dynamodb:LeadingKeys` (undefined: the table is not known). @internal */
export type PartitionKeyOf = (tableName: string) => string | undefined;

const header = (request: IncomingRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * Who signed the request, from its SigV4 `Authorization` header (`Credential=<key>/<date>/<region>/<service>/…`)
 * or, for a presigned URL, its `X-Amz-Credential` parameter. The signature itself is not checked.
 */
function credentialScope(request: IncomingRequest, query: URLSearchParams) {
  const authorization = header(request, 'authorization') ?? '';
  const credential =
    /Credential=([^,\s]+)/.exec(authorization)?.[1] ?? query.get('X-Amz-Credential') ?? undefined;
  const [accessKeyId, , region, service] = credential?.split('/') ?? [];
  return { accessKeyId, region, service };
}

/**
 * Describes a signed request to the local SQS, S3 or DynamoDB endpoint: its signer (access key id), service and
 * region from the SigV4 credential scope, and the authorizations AWS makes for it (see {@link sqsCalls},
 * {@link s3Calls}, {@link dynamoDbCalls}). A service this layer does not know yields no call (the proxy lets it
 * through unchecked, as the layer says in docs/local.md).
 *
 * @internal
 */
export function describeRequest(
  request: IncomingRequest,
  defaults: { readonly region: string; readonly partitionKeyOf?: PartitionKeyOf },
): DescribedRequest {
  const url = new URL(request.url, 'http://local');
  const scope = credentialScope(request, url.searchParams);
  const region = scope.region || defaults.region;
  const base = { service: scope.service, accessKeyId: scope.accessKeyId, region };
  if (scope.service === 'sqs') return { ...base, ...sqsCalls(request, region) };
  if (scope.service === 's3') return { ...base, ...s3Calls(request, url) };
  if (scope.service === 'dynamodb') {
    return { ...base, ...dynamoDbCalls(request, region, defaults.partitionKeyOf ?? (() => undefined)) };
  }
  return { ...base, operation: `${request.method} ${url.pathname}`, calls: [] };
}

/** The IAM action of each SQS batch operation: AWS authorizes a batch as its single-message action. */
const SQS_BATCH_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

/**
 * SQS, in the JSON protocol (`X-Amz-Target: AmazonSQS.<Operation>`, JSON body) the SDK speaks, or the query
 * protocol (form body with `Action=`). The resource is the queue of `QueueUrl` (its last path segment is the
 * name), of `QueueName` (CreateQueue, GetQueueUrl) or of `SourceArn` (message move tasks); ListQueues has none.
 *
 * @internal
 */
export function sqsCalls(
  request: IncomingRequest,
  region: string,
): { operation: string; calls: AuthorizationCall[] } {
  const target = header(request, 'x-amz-target');
  let operation: string;
  let parameters: Record<string, unknown>;
  if (target?.startsWith('AmazonSQS.')) {
    operation = target.slice('AmazonSQS.'.length);
    parameters =
      request.body.length > 0 ? (JSON.parse(request.body.toString('utf8')) as Record<string, unknown>) : {};
  } else {
    const form = new URLSearchParams(request.body.toString('utf8'));
    operation = form.get('Action') ?? 'Unknown';
    parameters = Object.fromEntries(form);
  }
  const arnOf = (name: string, account = LOCAL_ACCOUNT_ID) => `arn:aws:sqs:${region}:${account}:${name}`;
  let resource = '*';
  if (typeof parameters.QueueUrl === 'string') {
    // Split, not `new URL`: fauxqs's queue URLs (`http://sqs.<region>.127.0.0.1:<port>/…`) are not WHATWG URLs.
    const path = parameters.QueueUrl.replace(/^[a-z]+:\/\/[^/]*/i, '').split('?')[0] ?? '';
    const [account, name] = path.split('/').filter(Boolean).slice(-2);
    resource = arnOf(name ?? '', /^[0-9]{12}$/.test(account ?? '') ? account : undefined);
  } else if (typeof parameters.QueueName === 'string') {
    resource = arnOf(parameters.QueueName, (parameters.QueueOwnerAWSAccountId as string) ?? undefined);
  } else if (typeof parameters.SourceArn === 'string') {
    resource = parameters.SourceArn;
  }
  const action = `sqs:${SQS_BATCH_ACTIONS[operation] ?? operation}`;
  return { operation, calls: [{ action, resource }] };
}

/** Bucket subresources (query parameters) and the IAM action of each method on them. */
const S3_BUCKET_SUBRESOURCES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  versioning: { GET: 'GetBucketVersioning', PUT: 'PutBucketVersioning' },
  location: { GET: 'GetBucketLocation' },
  policy: { GET: 'GetBucketPolicy', PUT: 'PutBucketPolicy', DELETE: 'DeleteBucketPolicy' },
  versions: { GET: 'ListBucketVersions' },
  uploads: { GET: 'ListBucketMultipartUploads' },
  lifecycle: {
    GET: 'GetLifecycleConfiguration',
    PUT: 'PutLifecycleConfiguration',
    DELETE: 'PutLifecycleConfiguration',
  },
  tagging: { GET: 'GetBucketTagging', PUT: 'PutBucketTagging', DELETE: 'PutBucketTagging' },
  acl: { GET: 'GetBucketAcl', PUT: 'PutBucketAcl' },
  notification: { GET: 'GetBucketNotification', PUT: 'PutBucketNotification' },
  cors: { GET: 'GetBucketCORS', PUT: 'PutBucketCORS', DELETE: 'PutBucketCORS' },
  encryption: {
    GET: 'GetEncryptionConfiguration',
    PUT: 'PutEncryptionConfiguration',
    DELETE: 'PutEncryptionConfiguration',
  },
};

/** The IAM action of an S3 request on an object (`key` set). */
function s3ObjectAction(method: string, query: URLSearchParams): string {
  const version = query.has('versionId');
  if (query.has('uploadId')) {
    if (method === 'DELETE') return 'AbortMultipartUpload';
    if (method === 'GET') return 'ListMultipartUploadParts';
    return 'PutObject';
  }
  if (query.has('uploads')) return 'PutObject';
  if (query.has('tagging')) {
    const verb = method === 'GET' ? 'Get' : method === 'DELETE' ? 'Delete' : 'Put';
    return `${verb}Object${version ? 'Version' : ''}Tagging`;
  }
  if (query.has('acl')) return `${method === 'GET' ? 'Get' : 'Put'}Object${version ? 'Version' : ''}Acl`;
  if (query.has('attributes')) return `GetObject${version ? 'Version' : ''}Attributes`;
  if (query.has('restore')) return 'RestoreObject';
  if (method === 'GET' || method === 'HEAD') return version ? 'GetObjectVersion' : 'GetObject';
  if (method === 'DELETE') return version ? 'DeleteObjectVersion' : 'DeleteObject';
  return 'PutObject';
}

/**
 * S3 REST, path-style (`/bucket/key`, as the local clients send it): the action from the method, whether a key
 * is named, and the subresource in the query (`?versionId`, `?uploads`, `?versioning`, …); the resource is the
 * object (`arn:aws:s3:::bucket/key`) or the bucket. A copy also reads its source (`x-amz-copy-source`: GetObject
 * on it), and a multi-object delete (`POST ?delete`) deletes each key it lists.
 *
 * @internal
 */
export function s3Calls(
  request: IncomingRequest,
  url: URL,
): { operation: string; calls: AuthorizationCall[] } {
  const method = request.method.toUpperCase();
  const query = url.searchParams;
  const [bucketPart, ...keyParts] = url.pathname.slice(1).split('/');
  const bucket = decodeURIComponent(bucketPart ?? '');
  const key = keyParts.map(decodeURIComponent).join('/');
  const call = (action: string, resource: string): AuthorizationCall => ({
    action: `s3:${action}`,
    resource,
  });
  if (!bucket) return { operation: 'ListBuckets', calls: [call('ListAllMyBuckets', '*')] };
  const bucketArn = `arn:aws:s3:::${bucket}`;
  if (key) {
    const action = s3ObjectAction(method, query);
    const calls = [call(action, `${bucketArn}/${key}`)];
    const copySource = header(request, 'x-amz-copy-source');
    if (copySource && method === 'PUT') {
      const [source = '', sourceVersion] = decodeURIComponent(copySource)
        .replace(/^\//, '')
        .split('?versionId=');
      calls.unshift(call(sourceVersion ? 'GetObjectVersion' : 'GetObject', `arn:aws:s3:::${source}`));
    }
    return { operation: action, calls };
  }
  if (method === 'POST' && query.has('delete')) {
    const body = request.body.toString('utf8');
    const objects = [...body.matchAll(/<Object>([\s\S]*?)<\/Object>/g)].map((match) => match[1] ?? '');
    const calls = objects.map((object) => {
      const objectKey = /<Key>([\s\S]*?)<\/Key>/.exec(object)?.[1] ?? '';
      const versioned = /<VersionId>/.test(object);
      return call(
        versioned ? 'DeleteObjectVersion' : 'DeleteObject',
        `${bucketArn}/${unescapeXml(objectKey)}`,
      );
    });
    return { operation: 'DeleteObjects', calls };
  }
  for (const [subresource, actions] of Object.entries(S3_BUCKET_SUBRESOURCES)) {
    if (!query.has(subresource)) continue;
    const action = actions[method];
    if (action) return { operation: action, calls: [call(action, bucketArn)] };
  }
  const action =
    method === 'PUT'
      ? 'CreateBucket'
      : method === 'DELETE'
        ? 'DeleteBucket'
        : 'ListBucket'; /* GET (ListObjects, ListObjectsV2) and HEAD (HeadBucket) */
  return { operation: action, calls: [call(action, bucketArn)] };
}

const unescapeXml = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

type AttributeValue = Readonly<Record<string, unknown>>;
type Item = Readonly<Record<string, AttributeValue>>;

/** The scalar text of an attribute value (`{ S: 'x' }` → `x`), as `dynamodb:LeadingKeys` compares it. */
const scalar = (value: AttributeValue | undefined): string | undefined => {
  const raw = value?.S ?? value?.N ?? value?.B;
  return raw === undefined ? undefined : String(raw);
};

/**
 * The partition key values a Query's key condition names (`#pk = :pk`, `PK = :v`), for `dynamodb:LeadingKeys`.
 */
function queryLeadingKeys(parameters: Record<string, unknown>, partitionKey: string): string[] {
  const names = (parameters.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (parameters.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
  const expression = String(parameters.KeyConditionExpression ?? '');
  const keys: string[] = [];
  for (const match of expression.matchAll(/([#A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)/g)) {
    const name = match[1]?.startsWith('#') ? names[match[1]] : match[1];
    const value = scalar(values[match[2] ?? '']);
    if (name === partitionKey && value !== undefined) keys.push(value);
  }
  const legacy = (parameters.KeyConditions as Record<string, { AttributeValueList?: AttributeValue[] }>)?.[
    partitionKey
  ];
  const legacyValue = scalar(legacy?.AttributeValueList?.[0]);
  if (legacyValue !== undefined) keys.push(legacyValue);
  return keys;
}

/**
 * DynamoDB (`X-Amz-Target: DynamoDB_20120810.<Operation>`, JSON body): one authorization per table and contained
 * action, as AWS makes them. TransactWriteItems has no IAM action of its own: each item is authorized as
 * PutItem, UpdateItem, DeleteItem or ConditionCheckItem on its table; TransactGetItems as GetItem per item;
 * BatchWriteItem and BatchGetItem as themselves, once per table. Every call carries the partition keys of its
 * items as `dynamodb:LeadingKeys` when the table's key attribute is known; an index query names the index ARN.
 *
 * @internal
 */
export function dynamoDbCalls(
  request: IncomingRequest,
  region: string,
  partitionKeyOf: PartitionKeyOf,
): { operation: string; calls: AuthorizationCall[] } {
  const target = header(request, 'x-amz-target') ?? '';
  const operation = target.split('.')[1] ?? 'Unknown';
  const parameters =
    request.body.length > 0 ? (JSON.parse(request.body.toString('utf8')) as Record<string, unknown>) : {};
  const tableArn = (table: string) => `arn:aws:dynamodb:${region}:${LOCAL_ACCOUNT_ID}:table/${table}`;
  const call = (action: string, table: string, items: readonly (Item | undefined)[], index?: string) => {
    const partitionKey = partitionKeyOf(table);
    const leading = partitionKey
      ? items.map((item) => scalar(item?.[partitionKey])).filter((key): key is string => key !== undefined)
      : [];
    return {
      action: `dynamodb:${action}`,
      resource: index ? `${tableArn(table)}/index/${index}` : tableArn(table),
      ...(leading.length > 0 ? { context: { 'dynamodb:LeadingKeys': leading } } : {}),
    };
  };
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const entries = (parameters.TransactItems ?? []) as Record<string, Record<string, unknown>>[];
    const calls = entries.flatMap((entry) =>
      Object.entries(entry).map(([kind, body]) => {
        const action =
          kind === 'Put'
            ? 'PutItem'
            : kind === 'Update'
              ? 'UpdateItem'
              : kind === 'Delete'
                ? 'DeleteItem'
                : kind === 'ConditionCheck'
                  ? 'ConditionCheckItem'
                  : 'GetItem';
        return call(action, String(body.TableName), [(body.Item ?? body.Key) as Item]);
      }),
    );
    return { operation, calls };
  }
  if (operation === 'BatchWriteItem' || operation === 'BatchGetItem') {
    const tables = (parameters.RequestItems ?? {}) as Record<string, unknown>;
    const calls = Object.entries(tables).map(([table, body]) => {
      const items =
        operation === 'BatchWriteItem'
          ? (body as Record<string, { Item?: Item; Key?: Item }>[]).map(
              (entry) => entry.PutRequest?.Item ?? entry.DeleteRequest?.Key,
            )
          : ((body as { Keys?: Item[] }).Keys ?? []);
      return call(operation, table, items);
    });
    return { operation, calls };
  }
  const table = String(parameters.TableName ?? parameters.TableArn ?? '*');
  if (table === '*') return { operation, calls: [{ action: `dynamodb:${operation}`, resource: '*' }] };
  const index = typeof parameters.IndexName === 'string' ? parameters.IndexName : undefined;
  if (operation === 'Query') {
    const partitionKey = partitionKeyOf(table);
    const keys = partitionKey ? queryLeadingKeys(parameters, partitionKey) : [];
    return {
      operation,
      calls: [
        {
          action: 'dynamodb:Query',
          resource: index ? `${tableArn(table)}/index/${index}` : tableArn(table),
          ...(keys.length > 0 ? { context: { 'dynamodb:LeadingKeys': keys } } : {}),
        },
      ],
    };
  }
  const item = (parameters.Item ?? parameters.Key) as Item | undefined;
  return { operation, calls: [call(operation, table, item ? [item] : [], index)] };
}
